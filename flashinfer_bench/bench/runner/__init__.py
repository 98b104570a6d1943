"""Runners: where solution code runs (worker processes), and how their verdicts come back."""

from flashinfer_bench.bench.runner.devices import available_devices
from flashinfer_bench.bench.runner.protocol import WorkItem, WorkOutcome
from flashinfer_bench.bench.runner.runner import ProcessRunner, Runner, Verdict


def persistent_runner(devices: list[str], *, timeout_seconds: float, cache_dir: str | None = None) -> ProcessRunner:
    """One long-lived worker per device (plus a warm spare that replaces it if it dies)."""
    return ProcessRunner(devices, timeout_seconds=timeout_seconds, items_per_worker=None, cache_dir=cache_dir)


def isolated_runner(devices: list[str], *, timeout_seconds: float, cache_dir: str | None = None) -> ProcessRunner:
    """A fresh worker process for every (solution, workload)."""
    return ProcessRunner(devices, timeout_seconds=timeout_seconds, items_per_worker=1, cache_dir=cache_dir)


__all__ = [
    "ProcessRunner",
    "Runner",
    "Verdict",
    "WorkItem",
    "WorkOutcome",
    "available_devices",
    "isolated_runner",
    "persistent_runner",
]
