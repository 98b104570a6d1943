"""Running trace-set benchmarks: configuration, evaluators, runners and the Benchmark itself."""

from flashinfer_bench.bench.benchmark import Benchmark
from flashinfer_bench.bench.config import BenchmarkConfig, EvalConfig, ResolvedEvalConfig

__all__ = ["Benchmark", "BenchmarkConfig", "EvalConfig", "ResolvedEvalConfig"]
