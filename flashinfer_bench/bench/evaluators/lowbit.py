"""Low-bit kernels (fp8/fp4 block-scale MoE, quantised GEMMs): pass when enough elements are within tolerance."""

from __future__ import annotations

from flashinfer_bench.bench.config import ResolvedEvalConfig
from flashinfer_bench.bench.evaluators.compare import ValueErrors
from flashinfer_bench.bench.evaluators.evaluator import CorrectnessResult, Evaluator
from flashinfer_bench.data import Correctness, Definition, DType, EvaluationStatus

LOWBIT_OP_TYPES = {"lowbit", "moe"}
DEFAULT_REQUIRED_MATCHED_RATIO = 0.95


class LowbitEvaluator(Evaluator):
    @classmethod
    def can_evaluate(cls, definition: Definition) -> bool:
        if definition.op_type in LOWBIT_OP_TYPES or "lowbit" in definition.tags:
            return True
        # an input of an open dtype (FlashInfer's plan-time index arrays) is not known to be low-bit
        return any(not spec.is_open and DType(spec.dtype).is_low_bit for spec in definition.inputs.values())

    @classmethod
    def verdict(cls, errors: ValueErrors, cfg: ResolvedEvalConfig) -> CorrectnessResult:
        required = cfg.required_matched_ratio or DEFAULT_REQUIRED_MATCHED_RATIO
        correctness = Correctness(
            max_relative_error=errors.max_relative_error,
            max_absolute_error=errors.max_absolute_error,
            extra={"matched_ratio": errors.matched_ratio, "required_matched_ratio": required},
        )
        if errors.nonfinite:
            return CorrectnessResult(EvaluationStatus.INCORRECT_NUMERICAL, correctness, "output has NaN or Inf")
        if errors.matched_ratio < required:
            return CorrectnessResult(
                EvaluationStatus.INCORRECT_NUMERICAL, correctness,
                f"matched ratio {errors.matched_ratio:.4f} < required {required}",
            )
        return CorrectnessResult(EvaluationStatus.PASSED, correctness)
