"""FlashInfer-Bench: trustworthy correctness and performance verdicts for GPU kernels.

The data model and the benchmark are importable from here under upstream's names
(``from flashinfer_bench import TraceSet, Definition, Benchmark, BenchmarkConfig``); each is imported on first
use, so that ``import flashinfer_bench`` stays cheap.
"""

from flashinfer_bench._lazy import lazy_exports

__version__ = "0.1.0"

_DATA_NAMES = (
    "AxisConst", "AxisSpec", "AxisVar", "BuildSpec", "Correctness", "Definition", "Environment", "Evaluation",
    "EvaluationStatus", "InputSpec", "Performance", "RandomInput", "SafetensorsInput", "ScalarInput", "Solution",
    "SourceFile", "SupportedBindings", "SupportedLanguages", "TensorSpec", "Trace", "TraceSet", "Workload",
)
_EXPORTS = {
    "Benchmark": "flashinfer_bench.bench",
    "BenchmarkConfig": "flashinfer_bench.bench",
    **dict.fromkeys(_DATA_NAMES, "flashinfer_bench.data"),
}

__all__ = list(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
