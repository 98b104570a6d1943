"""Runners: where solution code runs (worker processes), and how their verdicts come back.

Names are imported on first use, so that ``runner.server`` can start the worker server from a process that
has imported nothing heavy yet.
"""

from importlib import import_module
from typing import Any

_EXPORTS = {
    "ProcessRunner": "flashinfer_bench.bench.runner.runner",
    "Runner": "flashinfer_bench.bench.runner.runner",
    "Verdict": "flashinfer_bench.bench.runner.runner",
    "isolated_runner": "flashinfer_bench.bench.runner.runner",
    "persistent_runner": "flashinfer_bench.bench.runner.runner",
    "WorkItem": "flashinfer_bench.bench.runner.protocol",
    "WorkOutcome": "flashinfer_bench.bench.runner.protocol",
    "available_devices": "flashinfer_bench.bench.runner.devices",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)
