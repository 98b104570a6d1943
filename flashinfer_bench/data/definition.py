"""Definition: what a kernel computes (axes, typed inputs and outputs) and the reference that says how.

Two producers write definitions: upstream flashinfer-bench's dataset, and FlashInfer itself
(``@flashinfer_api(trace=...)`` with ``FLASHINFER_TRACE_DUMP=1``), whose files carry more (``init``, ``check``,
``optional``, ``param``, an ``fi_api:`` tag, a reference named after the op). Both load into these models; see
docs/trace-format.md. Every definition model remembers the keys it was read from, in order, and the values of
keys it does not declare, so that ``data.definition_file`` writes a file back exactly as it was read, while
``model_dump_json`` keeps writing what upstream writes (declared fields only, in declaration order).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from flashinfer_bench.data.constraints import Constraint, ConstraintError
from flashinfer_bench.data.dtypes import DType, OpenDType, parse_dtype
from flashinfer_bench.data.entry_points import FLASHINFER_API_TAG, entry_point, reference_entry_point
from flashinfer_bench.data.names import Name

NonEmptyStr = Annotated[str, Field(min_length=1)]


class _Model(BaseModel):
    # As upstream: unknown fields are accepted and dropped; fields are written in declaration order.
    model_config = ConfigDict(extra="ignore")


class _Recorded(_Model):
    """A definition part that remembers how it was written: its keys in order and the values of undeclared
    ones (private: ``model_dump`` never shows them). Fields in ``_WRITTEN_WHEN_SET`` are FlashInfer's
    additions: ``model_dump`` leaves them out while they are None, so older files are written as before."""

    _WRITTEN_WHEN_SET: ClassVar[frozenset[str]] = frozenset()
    _keys: tuple[str, ...] | None = PrivateAttr(default=None)
    _undeclared: dict[str, Any] = PrivateAttr(default_factory=dict)

    def __eq__(self, other: object) -> bool:
        """Equal content: the same fields and the same undeclared keys, however the keys were ordered or which
        None-valued ones were written (how a part was written is not what it says)."""
        if type(other) is not type(self):
            return NotImplemented
        return self.__dict__ == other.__dict__ and self._undeclared == other._undeclared

    __hash__ = None  # type: ignore[assignment] - mutable, as pydantic's models

    @model_validator(mode="wrap")
    @classmethod
    def _record_keys(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        model = handler(data)
        if isinstance(data, dict) and isinstance(model, cls):
            model._keys = tuple(data)
            model._undeclared = {key: value for key, value in data.items() if key not in cls.model_fields}
        return model

    @model_serializer(mode="wrap")
    def _leave_out_unset_additions(self, handler: SerializerFunctionWrapHandler) -> Any:
        dumped = handler(self)
        if isinstance(dumped, dict):
            for key in self._WRITTEN_WHEN_SET:
                if dumped.get(key, 0) is None:
                    del dumped[key]
        return dumped

    @property
    def written_keys(self) -> tuple[str, ...] | None:
        """The keys this part was read from, in their order (None for a part made in code)."""
        return self._keys

    @property
    def undeclared_values(self) -> dict[str, Any]:
        """Keys this part was read with that no field declares, and their values."""
        return dict(self._undeclared)


class ConstAxis(_Recorded):
    """An axis whose length is fixed by the definition.

    FlashInfer writes a const axis without ``value`` when the traced call did not show its length (e.g. a page
    size fixed at plan time): such an axis is bound by each workload, like a var axis. Without ``"type":
    "const"``, ``value`` is what makes an axis const (``{}`` is a var axis, as upstream reads it).
    """

    _WRITTEN_WHEN_SET: ClassVar[frozenset[str]] = frozenset({"value"})
    type: Literal["const"] = "const"
    value: Annotated[int, Field(ge=0)] | None = None
    description: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _const_needs_a_mark(cls, data: Any) -> Any:
        if isinstance(data, dict) and "type" not in data and "value" not in data:
            raise ValueError("a const axis needs 'value' or \"type\": \"const\"")
        return data


class VarAxis(_Recorded):
    """An axis whose length each workload binds."""

    type: Literal["var"] = "var"
    description: str | None = None


#: As upstream, a plain union: ``type`` may be left out (``{"value": 8}`` is const, ``{}`` var).
Axis = ConstAxis | VarAxis


def _dtype_value(dtype: DType | OpenDType) -> str:
    return dtype.value


class TensorSpec(_Recorded):
    """One input or output: its shape as axis names (None for a scalar) and its element type.

    ``optional`` (FlashInfer): the argument may be left out (None). ``param`` (FlashInfer, outputs): the API
    parameter the output is written into (``out``, or the input an in-place API overwrites).
    """

    shape: list[str] | None
    dtype: Annotated[DType | OpenDType, PlainValidator(parse_dtype), PlainSerializer(_dtype_value, return_type=str)]
    description: str | None = None
    # Upstream drops both (the public dataset has ``optional`` on a few inputs): ``model_dump`` leaves them
    # out, so upstream's files are written as before; ``data.definition_file`` writes them back.
    optional: bool | None = Field(default=None, exclude=True)
    param: NonEmptyStr | None = Field(default=None, exclude=True)

    @property
    def is_open(self) -> bool:
        """Whether the dtype names no fixed element type (``unknown``, ``string``, ``dtype``)."""
        return isinstance(self.dtype, OpenDType)


class Definition(_Recorded):
    """A kernel's contract. ``reference`` is Python source whose entry point (``reference_entry``) takes the
    inputs and returns the outputs.

    FlashInfer's additions: ``init`` (source of an input generator), ``check`` (source of a correctness
    callback), outputs named like an input (written in place into that input), and a definition FlashInfer
    wrote without a reference (its template has none): it loads, and whatever needs the reference says so.
    """

    _WRITTEN_WHEN_SET: ClassVar[frozenset[str]] = frozenset({"reference", "init", "check"})
    name: Name
    op_type: Name
    axes: dict[str, Axis]
    inputs: dict[str, TensorSpec]
    outputs: dict[str, TensorSpec]
    reference: NonEmptyStr | None
    tags: list[NonEmptyStr] = Field(default_factory=list)
    description: str | None = None
    constraints: list[NonEmptyStr] = Field(default_factory=list)
    init: NonEmptyStr | None = None
    check: NonEmptyStr | None = None

    @model_validator(mode="before")
    @classmethod
    def _flashinfer_may_leave_out_the_reference(cls, data: Any) -> Any:
        if isinstance(data, dict) and "reference" not in data and _flashinfer_tag(data.get("tags")):
            return {**data, "reference": None}
        return data

    @model_validator(mode="after")
    def _check_consistency(self) -> Definition:
        if self.reference is None and self.fi_api is None:
            raise ValueError("reference is null; only a definition FlashInfer wrote (an 'fi_api:' tag) may "
                             "have no reference")
        for kind, specs in (("inputs", self.inputs), ("outputs", self.outputs)):
            for tensor_name, spec in specs.items():
                for axis in spec.shape or ():
                    if axis not in self.axes:
                        raise ValueError(
                            f"{kind}.{tensor_name}.shape names axis '{axis}', which is not declared in axes "
                            f"(declared: {sorted(self.axes)})"
                        )
        if self.reference is not None:
            reference_entry_point(self.reference)
        if self.init is not None:
            entry_point("init", self.init)
        if self.check is not None:
            entry_point("check", self.check)
        return self

    @field_validator("constraints")
    @classmethod
    def _constraints_in_grammar(cls, constraints: list[str]) -> list[str]:
        """Stricter than upstream, which only parses them: see data.constraints for why."""
        for index, expression in enumerate(constraints):
            try:
                Constraint.parse(expression)
            except ConstraintError as exc:
                raise ValueError(f"constraints[{index}]: {exc}") from None
        return constraints

    @cached_property
    def parsed_constraints(self) -> tuple[Constraint, ...]:
        return tuple(Constraint.parse(expression) for expression in self.constraints)

    @property
    def var_axes(self) -> list[str]:
        return [name for name, axis in self.axes.items() if isinstance(axis, VarAxis)]

    @property
    def const_axes(self) -> dict[str, int]:
        """Const axes with their lengths (a const axis FlashInfer wrote without a value is not among them)."""
        return {name: axis.value for name, axis in self.axes.items()
                if isinstance(axis, ConstAxis) and axis.value is not None}

    @property
    def workload_axes(self) -> list[str]:
        """The axes a workload must bind: the var axes, and const axes written without a value."""
        return [name for name in self.axes if name not in self.const_axes]

    @property
    def reference_entry(self) -> str | None:
        """The name of the reference's entry point (see ``data.entry_points``); None without a reference."""
        return None if self.reference is None else reference_entry_point(self.reference)

    @property
    def fi_api(self) -> str | None:
        """The FlashInfer API a definition FlashInfer wrote traces (its ``fi_api:`` tag); None otherwise."""
        return _flashinfer_tag(self.tags)

    @property
    def status(self) -> str | None:
        """FlashInfer's verdict on its own template (its ``status:`` tag: ``verified``, ``experimental``)."""
        return next((tag.removeprefix("status:") for tag in self.tags if tag.startswith("status:")), None)

    @property
    def in_place_outputs(self) -> list[str]:
        """Outputs named like an input: the call writes them into that input (FlashInfer's in-place APIs)."""
        return [name for name in self.outputs if name in self.inputs]

    def bind_axes(self, workload_axes: dict[str, int]) -> dict[str, int]:
        """All axis lengths for a workload; raises ValueError naming what does not bind."""
        missing = [a for a in self.workload_axes if a not in workload_axes]
        if missing:
            raise ValueError(f"workload does not bind var axes {missing}")
        unknown = sorted(set(workload_axes) - set(self.axes))
        if unknown:
            raise ValueError(f"workload binds axes {unknown} that the definition does not declare")
        bound = dict(self.const_axes)
        for name, value in workload_axes.items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"axis '{name}' must be a non-negative integer, got {value!r}")
            if name in bound and bound[name] != value:
                raise ValueError(f"axis '{name}' is const {bound[name]} but the workload gives {value}")
            bound[name] = value
        return bound

    def constraint_violations(self, axes: dict[str, int], inputs: dict[str, Any],
                              constraints: Sequence[Constraint] | None = None) -> list[str]:
        """One message per constraint (of ``constraints``; all by default) that is false (or cannot be evaluated)
        for these axes and inputs.

        ``inputs`` maps input names to tensors, scalars or :class:`ShapeOnly` stand-ins; a constraint that
        needs values not known yet is skipped (it is checked again once the inputs exist).
        """
        values = {**axes, **inputs}
        violations = []
        for constraint in self.parsed_constraints if constraints is None else constraints:
            try:
                holds = constraint.evaluate(values)
            except ConstraintError as exc:
                violations.append(str(exc))
                continue
            if holds is False:
                explained = constraint.explain(values)
                violations.append(f"constraint {constraint.source!r} is false" + (f" ({explained})" if explained else ""))
        return violations

    def shape_of(self, spec: TensorSpec, axes: dict[str, int]) -> tuple[int, ...] | None:
        """Concrete shape of an input or output under bound axes (None for a scalar)."""
        if spec.shape is None:
            return None
        return tuple(axes[a] for a in spec.shape)


def _flashinfer_tag(tags: Any) -> str | None:
    if not isinstance(tags, list):
        return None
    return next((tag[len(FLASHINFER_API_TAG):] for tag in tags
                 if isinstance(tag, str) and tag.startswith(FLASHINFER_API_TAG)), None)
