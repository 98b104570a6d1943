"""Which evaluator judges a definition: the first in ``_EVALUATORS`` whose ``can_evaluate`` says yes.

To add one, append its class to ``_EVALUATORS`` (or call ``register_evaluator``); DefaultEvaluator is the fallback.
The choice is made in the parent process and sent to workers by import path, so an evaluator registered at run
time is used too, as long as its module can be imported.
"""

from __future__ import annotations

import importlib

from flashinfer_bench.bench.evaluators.default import DefaultEvaluator
from flashinfer_bench.bench.evaluators.distribution import DistributionEvaluator
from flashinfer_bench.bench.evaluators.dsa import DSAEvaluator
from flashinfer_bench.bench.evaluators.evaluator import Evaluator
from flashinfer_bench.bench.evaluators.lowbit import LowbitEvaluator
from flashinfer_bench.bench.evaluators.sampling import SamplingEvaluator
from flashinfer_bench.data import Definition

_EVALUATORS: list[type[Evaluator]] = [SamplingEvaluator, DistributionEvaluator, DSAEvaluator, LowbitEvaluator]


def register_evaluator(evaluator: type[Evaluator], *, first: bool = False) -> None:
    """Add an evaluator; ``first=True`` lets it take precedence over the built-in ones."""
    if first:
        _EVALUATORS.insert(0, evaluator)
    else:
        _EVALUATORS.append(evaluator)


def resolve_evaluator(definition: Definition) -> type[Evaluator]:
    return next((e for e in _EVALUATORS if e.can_evaluate(definition)), DefaultEvaluator)


def evaluator_path(evaluator: type[Evaluator]) -> str:
    """``module:QualifiedName``, how a worker process finds an evaluator chosen in the parent."""
    return f"{evaluator.__module__}:{evaluator.__qualname__}"


def load_evaluator(path: str) -> type[Evaluator]:
    module_name, _, qualname = path.partition(":")
    target: object = importlib.import_module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    if not (isinstance(target, type) and issubclass(target, Evaluator)):
        raise TypeError(f"{path} is not an Evaluator subclass")
    return target


def declared_extra_keys() -> set[str]:
    """The ``extra`` keys the registered evaluators declare (``extra_keys``), DefaultEvaluator's included."""
    return {key for evaluator in (*_EVALUATORS, DefaultEvaluator) for key in getattr(evaluator, "extra_keys", ())}
