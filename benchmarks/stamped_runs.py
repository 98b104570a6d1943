"""What the benchmarks that clock both sides of the judge-worker channel share (round_exchange.py,
call_exchange.py): evaluations of ``scale_add`` judged in this process with a worker of theirs that stamps what it
does and writes its stamps when it stops, and the table of percentiles they print.

Both processes stamp with ``time.perf_counter``, one clock on Linux (CLOCK_MONOTONIC) for every process.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import timed_call_costs

#: The folder where a stamping worker writes its stamps when it stops (set before any process starts: workers are
#: forked from a server that has the environment of its start).
STAMPS_ENV = "FLASHINFER_BENCH_WORKER_STAMPS"


def write_stamps(stamps: list[Any]) -> None:
    """The worker's: its stamps, for ``stamped_evaluations`` to read once it has stopped."""
    (Path(os.environ[STAMPS_ENV]) / f"stamps-{os.getpid()}.json").write_text(json.dumps(stamps))


def stamped_evaluations(worker: Callable[..., None], sizes: Sequence[int],
                        evaluations: int) -> Iterator[tuple[int, list[list[Any]]]]:
    """For each of ``sizes``: ``evaluations`` evaluations of ``scale_add`` at that many elements at the default
    settings, judged here (``timed_call_costs.remote_ms_per_evaluation``, the solution loaded again for each) with
    ``worker`` as the entry point of the worker, not sandboxed, on the first device; then the size and the stamps
    each of its workers wrote (``write_stamps``)."""
    from flashinfer_bench.bench.config import BenchmarkConfig
    from flashinfer_bench.bench.judge.context import EvaluationContext
    from flashinfer_bench.bench.runner import available_devices
    from flashinfer_bench.bench.seeds import new_run_secret
    from flashinfer_bench.data import Definition, Workload

    definition = Definition.model_validate(timed_call_costs.SCALE_ADD)
    timed_call_costs.unsandboxed_worker = worker
    with tempfile.TemporaryDirectory(prefix="fib-worker-stamps-") as directory:
        os.environ[STAMPS_ENV] = directory
        for n in sizes:
            ctx = EvaluationContext(definition, Workload(uuid=f"n{n}", axes={"n": n}, inputs={}),
                                    BenchmarkConfig.default().resolve(definition), available_devices()[0], None,
                                    new_run_secret())
            timed_call_costs.remote_ms_per_evaluation(ctx, evaluations, sandboxed=False, reload=True)
            stamps = []
            for path in Path(directory).glob("stamps-*.json"):
                stamps.append(json.loads(path.read_text()))
                path.unlink()
            yield n, stamps


def quantile_lines(columns: dict[str, list[float]]) -> list[str]:
    """Per column: its 10th percentile, median and 90th percentile (ms)."""
    lines = []
    for key, values in columns.items():
        q = statistics.quantiles(values, n=10) if len(values) > 1 else values * 9
        lines.append(f"  {key:26s} {q[0]:.3f} / {statistics.median(values):.3f} / {q[-1]:.3f}")
    return lines
