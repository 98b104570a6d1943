"""Running trace-set benchmarks: configuration, evaluators, runners and the Benchmark itself.

Names are imported on first use, so that ``flashinfer_bench.bench.runner`` can start its worker server before
anything in this process imports torch (the two imports then overlap instead of adding up).
"""

from importlib import import_module
from typing import Any

_EXPORTS = {
    "Benchmark": "flashinfer_bench.bench.benchmark",
    "BenchmarkConfig": "flashinfer_bench.bench.config",
    "EvalConfig": "flashinfer_bench.bench.config",
    "ResolvedEvalConfig": "flashinfer_bench.bench.config",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)
