"""The fallback evaluator: element-wise rtol/atol, NaN/Inf fail, shape and dtype checked first."""

from __future__ import annotations

from flashinfer_bench.bench.evaluators.evaluator import Evaluator
from flashinfer_bench.data import Definition


class DefaultEvaluator(Evaluator):
    @classmethod
    def can_evaluate(cls, definition: Definition) -> bool:
        return True
