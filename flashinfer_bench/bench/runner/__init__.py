"""The parent's side of a run: runners that start a judge and its workers per device (locally, or on a Ray
cluster), hand them work items in groups and report each verdict as it comes back.

Names are imported on first use, so that ``runner.server`` can start the worker server from a process that
has imported nothing heavy yet.
"""

from flashinfer_bench._lazy import lazy_exports

_EXPORTS = {
    "ProcessRunner": "flashinfer_bench.bench.runner.process_pool",
    "Runner": "flashinfer_bench.bench.runner.base",
    "Verdict": "flashinfer_bench.bench.runner.base",
    "isolated_runner": "flashinfer_bench.bench.runner.process_pool",
    "persistent_runner": "flashinfer_bench.bench.runner.process_pool",
    "WorkItem": "flashinfer_bench.bench.wire.parent_judge",
    "WorkOutcome": "flashinfer_bench.bench.wire.parent_judge",
    "available_devices": "flashinfer_bench.bench.runner.devices",
}

__all__ = list(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
