"""Calling a solution or a reference the same way whatever its style (destination-passing or value-returning)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from flashinfer_bench.bench.inputs import allocate_outputs, holds_floats
from flashinfer_bench.bench.reference_arguments import ReferenceCall, reference_call
from flashinfer_bench.data import Definition, Workload


class Callee(Protocol):
    fn: Callable[..., Any]
    destination_passing_style: bool


def setup_of(callee: Callee) -> Callable[..., Any] | None:
    """The callee's setup (compile.Runnable.setup), if it has one."""
    return getattr(callee, "setup", None)


def layout_inputs(definition: Definition, inputs: Sequence[Any]) -> dict[str, Any]:
    """The inputs a setup is given, by name: those that describe the problem's layout (integer and boolean
    tensors, scalars), never its floating-point data, so no output can be computed ahead of a call."""
    return {name: value for (name, spec), value in zip(definition.inputs.items(), inputs, strict=True)
            if not (isinstance(value, torch.Tensor) and holds_floats(spec, value))}


def set_up(callee: Callee, definition: Definition, inputs: Sequence[Any]) -> dict[str, Any]:
    """What the callee's setup returns for these inputs (keyword arguments of its call); {} without one."""
    setup = setup_of(callee)
    if setup is None:
        return {}
    state = setup(**layout_inputs(definition, inputs))
    if state is None:
        return {}
    if not isinstance(state, dict) or not all(isinstance(key, str) for key in state):
        raise TypeError(f"setup must return a dict of keyword arguments for the call (or None), not "
                        f"{type(state).__name__}")
    return state


@dataclass(frozen=True)
class ValueReturning:
    """A plain function that returns its outputs, e.g. a definition's reference ``run``."""

    fn: Callable[..., Any]
    destination_passing_style: bool = False


@dataclass(frozen=True)
class _ByKeyword:
    """The reference called with the inputs (given in the definition's order) by keyword, as ``call`` says."""

    fn: Callable[..., Any]
    names: tuple[str, ...]
    call: ReferenceCall

    def __call__(self, *args: Any) -> Any:
        return self.fn(**self.call.keywords(dict(zip(self.names, args, strict=True))))


def reference_callee(definition: Definition) -> ValueReturning:
    """The definition's reference, called with the inputs in the definition's order.

    A reference whose leading parameters are the inputs in order is called as it is. Any other is called by
    keyword (``reference_arguments``): a ``run`` that names the inputs in another order (four MoE definitions of
    the public dataset take ``routing_bias`` second but list it last), and FlashInfer's references, which take
    the API's arguments (fewer than the inputs, keyword-only ones, ``**kwargs``).
    """
    from flashinfer_bench.compile import build_reference

    fn = build_reference(definition)
    names = tuple(definition.inputs)
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # no introspectable signature: call it as it is
        return ValueReturning(fn)
    if any(p.kind in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL) for p in parameters) or \
            [p.name for p in parameters][: len(names)] == list(names):
        return ValueReturning(fn)
    return ValueReturning(_ByKeyword(fn, names, reference_call(definition, fn)))


@dataclass(frozen=True)
class ZeroFilling:
    """A destination-passing callee that writes zeros into its outputs and does nothing else: what the judge
    times, in a worker no solution has run in yet, to learn what the harness costs per call (its clock's
    floor, evaluators/clock.py)."""

    inputs: int
    destination_passing_style: bool = True

    def fn(self, *arguments: Any) -> None:
        for out in arguments[self.inputs:]:
            out.zero_()


class OutputCountError(ValueError):
    """A value-returning call gave a different number of outputs than the definition declares."""


def clone_inputs(inputs: Sequence[Any]) -> list[Any]:
    """Private copies, so that a solution writing into its inputs cannot change anyone else's."""
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise equality, so that NaN inputs compare equal to themselves (flattened first: a 0-dim tensor, a
    scalar input given as a tensor, cannot be viewed as bytes)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return torch.equal(a.reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8))


def written_inputs(names: Sequence[str], pristine: Sequence[Any], used: Sequence[Any]) -> dict[str, Any]:
    """The tensor inputs a call wrote into, by name, with the values it left in them."""
    written = set(modified_inputs(names, pristine, used))
    return {name: value for name, value in zip(names, used, strict=True) if name in written}


def modified_inputs(names: Sequence[str], pristine: Sequence[Any], used: Sequence[Any]) -> list[str]:
    """Names of tensor inputs that a call wrote into (``used`` were handed to it, ``pristine`` were not)."""
    return [
        name
        for name, before, after in zip(names, pristine, used, strict=True)
        if isinstance(before, torch.Tensor) and not _same_bits(before, after)
    ]


def normalize_outputs(result: Any, count: int) -> tuple[Any, ...]:
    outputs = tuple(result) if isinstance(result, (tuple, list)) else (result,)
    if len(outputs) != count:
        raise OutputCountError(f"returned {len(outputs)} output(s), the definition declares {count}")
    return outputs


def invoke(callee: Callee, definition: Definition, workload: Workload, inputs: Sequence[Any], device: str) -> tuple[Any, ...]:
    """Set up (if the callee has a setup), call once, and return the outputs in definition order."""
    state = set_up(callee, definition, inputs)
    if callee.destination_passing_style:
        outputs = allocate_outputs(definition, workload, device)
        callee.fn(*inputs, *outputs, **state)
        return tuple(outputs)
    return normalize_outputs(callee.fn(*inputs, **state), len(definition.outputs))


class TimedCall:
    """One call on ``inputs`` as the timer makes it: ``call()`` does exactly the call (output buffers allocated
    once, outside it; the setup's keyword arguments computed outside it), ``set_up()`` runs the setup again for
    the values the inputs hold now (after new values were swapped in), ``latest()`` gives the latest call's
    outputs in definition order."""

    def __init__(self, callee: Callee, definition: Definition, workload: Workload, inputs: Sequence[Any],
                 device: str) -> None:
        self.callee, self.definition, self.inputs = callee, definition, inputs
        self.outputs = allocate_outputs(definition, workload, device) if callee.destination_passing_style else None
        self.state: dict[str, Any] = {}
        self.result: Any = None
        self.set_up()

    @property
    def has_setup(self) -> bool:
        return setup_of(self.callee) is not None

    def set_up(self) -> None:
        self.state = set_up(self.callee, self.definition, self.inputs)

    def call(self) -> None:
        if self.outputs is not None:
            self.callee.fn(*self.inputs, *self.outputs, **self.state)
        else:
            self.result = self.callee.fn(*self.inputs, **self.state)

    def latest(self) -> tuple[Any, ...]:
        if self.outputs is not None:
            return tuple(self.outputs)
        return normalize_outputs(self.result, len(self.definition.outputs))


def take_values(into: list[Any], source: Sequence[Any]) -> None:
    """Make each tensor of ``into`` hold the values of the tensor at its place in ``source`` (same shapes), by
    taking over its storage: no copy, and the same tensor objects, so a call made with ``into`` sees them. Any
    other value (a scalar drawn with the inputs) is replaced by ``source``'s."""
    for index, (dst, src) in enumerate(zip(into, source, strict=True)):
        if isinstance(dst, torch.Tensor):
            dst.set_(src)
        else:
            into[index] = src
