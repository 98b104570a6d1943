"""A definition's ``check`` (FlashInfer's correctness callback) run as a correctness rule.

FlashInfer writes ``check`` as the source of one function, ``check(reference_outputs, actual_outputs,
**thresholds) -> bool``, rendered without its module: it names ``Any`` and ``Optional`` in its annotations and
imports ``default_check`` from ``flashinfer.trace`` when called. It runs here without FlashInfer: the module it
runs in holds torch, math and typing's names, and its ``from flashinfer.trace import ...`` gets this module's
``default_check``, ``default_tolerances`` and ``standard_check``, which decide as FlashInfer's do (documented in
docs/trace-format.md): per output, the same shape; floating outputs compared in float32 with ``isclose`` under
``rtol``/``atol`` (by default those of the output's dtype), failing when more than ``max_mismatch_pct`` percent
of elements mismatch or the cosine similarity of the finite elements is below ``min_cos_sim``; other tensors
compared exactly up to ``max_mismatch_pct``; non-tensors with ``==``. Nothing else is importable under
``flashinfer``. A check that takes an ``inputs`` parameter is also given the inputs by name.

The check is the definition's code, trusted as its reference is; it runs in the judge, on outputs already
copied out of the worker. It is a rule added to the evaluator's own tolerance checks, never a replacement.
"""

from __future__ import annotations

import builtins
import inspect
import math
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from flashinfer_bench.bench.definition_code import DefinitionCodeError, load_function
from flashinfer_bench.data import Definition

#: The name under which FlashInfer's check sources import their helpers.
FLASHINFER_TRACE_MODULE = "flashinfer.trace"


@dataclass(frozen=True)
class CheckVerdict:
    """What a definition's check decided: ``passed``, and a one-line ``message`` saying which check and why."""

    passed: bool
    message: str


#: Tolerance (relative and absolute alike) by dtype name; float8 and float4 are matched by prefix below.
_TOLERANCES = {"float64": 1e-7, "double": 1e-7, "float32": 1e-5, "float": 1e-5, "float16": 1e-3, "half": 1e-3,
               "bfloat16": 1e-2}


def default_tolerances(dtype: torch.dtype | str) -> tuple[float, float]:
    """``(rtol, atol)`` for an output of this dtype, as FlashInfer's trace checks default them."""
    name = str(dtype).replace("torch.", "")
    tolerance = _TOLERANCES.get(name)
    if tolerance is None and name.startswith("float8"):
        tolerance = 1e-1
    elif tolerance is None and (name.startswith("float4") or "fp4" in name):
        tolerance = 1.0
    return (tolerance, tolerance) if tolerance is not None else (0.0, 0.0)


def _cosine(actual: torch.Tensor, expected: torch.Tensor) -> float:
    actual, expected = actual.reshape(-1).float(), expected.reshape(-1).float()
    finite = torch.isfinite(actual) & torch.isfinite(expected)
    if not bool(finite.any()):
        return 1.0
    actual, expected = actual[finite], expected[finite]
    norms = float(torch.linalg.vector_norm(actual)) * float(torch.linalg.vector_norm(expected))
    if norms == 0:
        return 1.0 if torch.equal(actual, expected) else 0.0
    return float((actual * expected).sum()) / norms


def _as_list(outputs: Any) -> list[Any]:
    return list(outputs) if isinstance(outputs, list | tuple) else [outputs]


def _one_matches(expected: Any, actual: Any, rtol: float | None, atol: float | None, max_mismatch_pct: float,
                 min_cos_sim: float | None) -> bool:
    if isinstance(expected, torch.Tensor) != isinstance(actual, torch.Tensor):
        return False
    if not isinstance(expected, torch.Tensor):
        return bool(expected == actual)
    if expected.shape != actual.shape:
        return False
    if expected.numel() == 0:
        return True
    actual = actual.to(expected.device)
    if expected.is_floating_point() or actual.is_floating_point():
        default_rtol, default_atol = default_tolerances(actual.dtype if actual.is_floating_point() else expected.dtype)
        close = torch.isclose(actual.float(), expected.float(), rtol=default_rtol if rtol is None else rtol,
                              atol=default_atol if atol is None else atol)
        if 100.0 * (1.0 - float(close.float().mean())) > max_mismatch_pct:
            return False
        return min_cos_sim is None or _cosine(actual, expected) >= min_cos_sim
    return 100.0 * (1.0 - float((actual == expected).float().mean())) <= max_mismatch_pct


def default_check(reference_outputs: Any, actual_outputs: Any, *, rtol: float | None = None,
                  atol: float | None = None, max_mismatch_pct: float = 0.0,
                  min_cos_sim: float | None = 1.0 - 1e-3) -> bool:
    """Whether every actual output matches its reference output (lists, tuples, dicts with the same keys, or
    single values), as FlashInfer's ``default_check`` decides it."""
    if isinstance(reference_outputs, dict) or isinstance(actual_outputs, dict):
        if not (isinstance(reference_outputs, dict) and isinstance(actual_outputs, dict)) or \
                reference_outputs.keys() != actual_outputs.keys():
            return False
        expected, actual = list(reference_outputs.values()), [actual_outputs[k] for k in reference_outputs]
    else:
        expected, actual = _as_list(reference_outputs), _as_list(actual_outputs)
    return len(expected) == len(actual) and all(
        _one_matches(e, a, rtol, atol, max_mismatch_pct, min_cos_sim) for e, a in zip(expected, actual, strict=True))


def standard_check(reference_outputs: Any, actual_outputs: Any, *, rtol: float | None = None,
                   atol: float | None = None, max_mismatch_pct: float = 0.0,
                   min_cos_sim: float | None = 1.0 - 1e-3) -> bool:
    """FlashInfer's check for a definition whose template names none: ``default_check`` with its defaults."""
    return default_check(reference_outputs, actual_outputs, rtol=rtol, atol=atol,
                         max_mismatch_pct=max_mismatch_pct, min_cos_sim=min_cos_sim)


def _trace_module() -> types.ModuleType:
    module = types.ModuleType(FLASHINFER_TRACE_MODULE)
    module.default_check = default_check  # type: ignore[attr-defined]
    module.default_tolerances = default_tolerances  # type: ignore[attr-defined]
    module.standard_check = standard_check  # type: ignore[attr-defined]
    return module


def _check_namespace() -> dict[str, Any]:
    """The globals a check runs with: torch, math, typing's names, and an import that answers
    ``flashinfer.trace`` with this module's functions (everything else imports as usual)."""
    trace = _trace_module()
    real_import = builtins.__import__

    def importing(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        if level == 0 and (name == FLASHINFER_TRACE_MODULE or name.startswith("flashinfer.") or name == "flashinfer"):
            if name == FLASHINFER_TRACE_MODULE and fromlist:
                return trace
            raise ImportError(f"a definition's check may import only from {FLASHINFER_TRACE_MODULE} "
                              f"(default_check, default_tolerances, standard_check), not {name}")
        return real_import(name, globals, locals, fromlist, level)

    namespace: dict[str, Any] = {name: getattr(typing, name) for name in typing.__all__ if name[:1].isupper()}
    namespace.update(torch=torch, math=math, __builtins__={**vars(builtins), "__import__": importing})
    return namespace


def run_check(definition: Definition, inputs: Mapping[str, Any], outputs: Sequence[Any],
              reference_outputs: Sequence[Any]) -> CheckVerdict:
    """Run the definition's ``check`` on a solution's outputs and the reference's (both in the definition's
    output order); a check that raises fails, with what it raised. Raises DefinitionCodeError when the
    definition has no check or it does not load."""
    check = load_function(definition, "check", _check_namespace())
    name = check.__name__
    arguments: dict[str, Any] = {}
    if "inputs" in inspect.signature(check).parameters:
        arguments["inputs"] = dict(inputs)
    try:
        passed = check(list(reference_outputs), list(outputs), **arguments)
    except Exception as exc:  # the check's own failure is a verdict on these outputs, said in one line
        return CheckVerdict(False, f"the definition's check {name} raised {type(exc).__name__}: {exc}")
    if not isinstance(passed, bool | torch.Tensor) or (isinstance(passed, torch.Tensor) and passed.numel() != 1):
        return CheckVerdict(False, f"the definition's check {name} returned {type(passed).__name__}, not a bool")
    if bool(passed):
        return CheckVerdict(True, f"the definition's check {name} passed")
    return CheckVerdict(False, f"the definition's check {name} says the outputs do not match the reference's")


__all__ = ["CheckVerdict", "DefinitionCodeError", "default_check", "default_tolerances", "run_check",
           "standard_check"]
