"""When the judge times the references: before any solution code it may share the device with is there (the
group's references before its first solution is loaded; a worker that ran solution code retired and gone first),
with real judge and worker processes on the CPU."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

from helpers import scale_add_set

from flashinfer_bench.bench import Benchmark, BenchmarkConfig
from flashinfer_bench.bench.runner import persistent_runner
from flashinfer_bench.bench.runner.process import JudgeProcess
from flashinfer_bench.data import TraceSet

#: Says so in the item's log as its module is imported (the solution's code first runs then), and prints a number
#: drawn once per worker process with each call.
ANNOUNCES_ITS_IMPORT = ("import builtins, os\n"
                        "print('imported', flush=True)\n"
                        "if not hasattr(builtins, 'process_token'):\n"
                        "    builtins.process_token = int.from_bytes(os.urandom(6), 'big')\n"
                        "def run(x, y):\n    print('pid', builtins.process_token)\n    return x * 2 + y\n")
CONFIG = BenchmarkConfig(iterations=3, warmup_runs=1, num_trials=2, timeout_seconds=30)


def run_recording_baselines(tmp_path: Path, monkeypatch, split: int | None = None) -> tuple[list, list]:
    """Runs the one solution over four workloads (one group, or two of ``split`` and the rest); returns, per
    BASELINE message, (the item's workload, the message's workload, whether the solution had been imported in the
    item's log by then), and the verdicts."""
    trace_set = TraceSet.from_path(scale_add_set(tmp_path, {"s": ANNOUNCES_ITS_IMPORT}, sizes=(8, 16, 32, 64)))
    baselines, evaluate = [], JudgeProcess.evaluate

    def recording(self, item, worker, log_path, timeout, on_baseline):
        def on(uuid, timing):
            imported = "imported" in Path(log_path).read_text() if Path(log_path).exists() else False
            baselines.append((item.workload.uuid, uuid, imported))
            on_baseline(uuid, timing)

        return evaluate(self, item, worker, log_path, timeout, on)

    monkeypatch.setattr(JudgeProcess, "evaluate", recording)
    runner = persistent_runner(["cpu"], timeout_seconds=30)
    [group] = Benchmark(trace_set, CONFIG).work_groups(devices=1)
    if split is not None:
        blocks = [tuple(i.workload for i in group[:split]), tuple(i.workload for i in group[split:])]
        group = [replace(i, group=blocks[0] if k < split else blocks[1]) for k, i in enumerate(group)]
    verdicts, lock = [], threading.Lock()

    def record(verdict):
        with lock:
            verdicts.append(verdict)

    with runner:
        runner.run([group], record)
    return baselines, verdicts


def worker_of(verdict) -> int:
    return int(verdict.captured_output.split("pid ")[1].split()[0])


def test_a_groups_references_are_timed_before_its_solution_is_loaded_and_its_worker_kept(tmp_path, monkeypatch):
    baselines, verdicts = run_recording_baselines(tmp_path, monkeypatch)
    assert all(v.outcome.status.value == "PASSED" for v in verdicts)
    first_items = {uuid: (item, imported) for item, uuid, imported in reversed(baselines)}
    assert sorted(first_items) == ["w16", "w32", "w64", "w8"]
    # every reference was timed in the first item, before the solution's module was imported
    assert all(item == "w8" and not imported for item, imported in first_items.values())
    assert len({worker_of(v) for v in verdicts}) == 1  # known references: the worker stays for the group


def test_a_later_group_of_the_same_solution_gets_a_fresh_worker_before_its_references_are_timed(tmp_path,
                                                                                                 monkeypatch):
    baselines, verdicts = run_recording_baselines(tmp_path, monkeypatch, split=2)
    assert all(v.outcome.status.value == "PASSED" for v in verdicts)
    first = {}
    for item, uuid, imported in baselines:
        first.setdefault(uuid, (item, imported))
    assert first == {"w8": ("w8", False), "w16": ("w8", False), "w32": ("w32", False), "w64": ("w32", False)}
    workers = {v.item.workload.uuid: worker_of(v) for v in verdicts}
    assert workers["w8"] == workers["w16"] != workers["w32"] == workers["w64"]
