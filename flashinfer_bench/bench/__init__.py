"""Running trace-set benchmarks: configuration, evaluators, runners and the Benchmark itself.

Names are imported on first use, so that ``flashinfer_bench.bench.runner`` can start its worker server before
anything in this process imports torch (the two imports then overlap instead of adding up).
"""

from flashinfer_bench._lazy import lazy_exports

_EXPORTS = {
    "Benchmark": "flashinfer_bench.bench.benchmark",
    "BenchmarkConfig": "flashinfer_bench.bench.config",
    "ConfigNameError": "flashinfer_bench.bench.config_check",
    "EvalConfig": "flashinfer_bench.bench.config",
    "ResolvedEvalConfig": "flashinfer_bench.bench.config",
}

__all__ = list(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
