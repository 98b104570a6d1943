"""Evaluators judge a solution's outputs and time it; ``resolve_evaluator`` picks one per definition."""

from flashinfer_bench.bench.evaluators.default import DefaultEvaluator
from flashinfer_bench.bench.evaluators.distribution import DistributionEvaluator
from flashinfer_bench.bench.evaluators.dsa import DSAEvaluator
from flashinfer_bench.bench.evaluators.evaluator import Baseline, CorrectnessResult, Evaluator
from flashinfer_bench.bench.evaluators.lowbit import LowbitEvaluator
from flashinfer_bench.bench.evaluators.registry import (
    evaluator_path,
    load_evaluator,
    register_evaluator,
    resolve_evaluator,
)
from flashinfer_bench.bench.evaluators.sampling import SamplingEvaluator

LowBitEvaluator = LowbitEvaluator  # upstream's spelling

__all__ = [
    "Baseline",
    "CorrectnessResult",
    "DSAEvaluator",
    "DefaultEvaluator",
    "DistributionEvaluator",
    "Evaluator",
    "LowbitEvaluator",
    "SamplingEvaluator",
    "evaluator_path",
    "load_evaluator",
    "register_evaluator",
    "resolve_evaluator",
]
