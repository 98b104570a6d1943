"""Definition: what a kernel computes (axes, typed inputs and outputs) and the reference that says how."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from flashinfer_bench.data.constraints import Constraint, ConstraintError
from flashinfer_bench.data.dtypes import DType
from flashinfer_bench.data.names import Name

NonEmptyStr = Annotated[str, Field(min_length=1)]


class _Model(BaseModel):
    # As upstream: unknown fields are accepted and dropped; fields are written in declaration order.
    model_config = ConfigDict(extra="ignore")


class ConstAxis(_Model):
    """An axis whose length is fixed by the definition."""

    type: Literal["const"] = "const"
    value: Annotated[int, Field(ge=0)]
    description: str | None = None


class VarAxis(_Model):
    """An axis whose length each workload binds."""

    type: Literal["var"] = "var"
    description: str | None = None


#: As upstream, a plain union: ``type`` may be left out (``{"value": 8}`` is const, ``{}`` var).
Axis = ConstAxis | VarAxis


class TensorSpec(_Model):
    """One input or output: its shape as axis names (None for a scalar) and its element type."""

    shape: list[str] | None
    dtype: DType
    description: str | None = None


class Definition(_Model):
    """A kernel's contract. ``reference`` is Python source defining ``run(*inputs)`` that returns the outputs."""

    name: Name
    op_type: Name
    axes: dict[str, Axis]
    inputs: dict[str, TensorSpec]
    outputs: dict[str, TensorSpec]
    reference: NonEmptyStr
    tags: list[NonEmptyStr] = Field(default_factory=list)
    description: str | None = None
    constraints: list[NonEmptyStr] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check_consistency(self) -> Definition:
        overlap = sorted(set(self.inputs) & set(self.outputs))
        if overlap:
            raise ValueError(f"input and output names must not overlap, both have {overlap}")
        for kind, specs in (("inputs", self.inputs), ("outputs", self.outputs)):
            for tensor_name, spec in specs.items():
                for axis in spec.shape or ():
                    if axis not in self.axes:
                        raise ValueError(
                            f"{kind}.{tensor_name}.shape names axis '{axis}', which is not declared in axes "
                            f"(declared: {sorted(self.axes)})"
                        )
        _check_reference_source(self.reference)
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
        return {name: axis.value for name, axis in self.axes.items() if isinstance(axis, ConstAxis)}

    def bind_axes(self, workload_axes: dict[str, int]) -> dict[str, int]:
        """All axis lengths for a workload; raises ValueError naming what does not bind."""
        missing = [a for a in self.var_axes if a not in workload_axes]
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


def _check_reference_source(source: str) -> None:
    try:
        module = ast.parse(source)
    except SyntaxError as exc:
        raise ValueError(f"reference is not valid Python (line {exc.lineno}: {exc.msg})") from None
    if not any(isinstance(node, ast.FunctionDef) and node.name == "run" for node in module.body):
        raise ValueError("reference must define a top-level function run(*inputs)")
