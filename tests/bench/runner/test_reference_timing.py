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

#: Prints a number drawn once per worker process with each call.
PRINTS_ITS_WORKER = ("import builtins, os\n"
                     "if not hasattr(builtins, 'process_token'):\n"
                     "    builtins.process_token = int.from_bytes(os.urandom(6), 'big')\n"
                     "def run(x, y):\n    print('pid', builtins.process_token)\n    return x * 2 + y\n")
CONFIG = BenchmarkConfig(iterations=3, warmup_runs=1, num_trials=2, timeout_seconds=30)


class RecordingChannel:
    """The parent's end of a judge's channel, noting each message's tag (and a BASELINE's workload) as it is read:
    the judge sends BUILT once the worker has loaded (imported) the solution, so a BASELINE read before it was sent
    before the solution's code ran."""

    def __init__(self, conn, item: str, messages: list) -> None:
        self.conn, self.item, self.messages = conn, item, messages

    def fileno(self) -> int:
        return self.conn.fileno()

    def send(self, message) -> None:
        self.conn.send(message)

    def recv(self):
        tag, payload = self.conn.recv()
        self.messages.append((self.item, tag, payload[0] if tag == "baseline" else None))
        return tag, payload


def run_recording_messages(tmp_path: Path, monkeypatch, split: int | None = None) -> tuple[list, list]:
    """Runs the one solution over four workloads (one group, or two: the first ``split`` and the rest); returns the
    judge's messages to the parent, as (item's workload, tag, BASELINE's workload), and the verdicts."""
    trace_set = TraceSet.from_path(scale_add_set(tmp_path, {"s": PRINTS_ITS_WORKER}, sizes=(8, 16, 32, 64)))
    messages, evaluate = [], JudgeProcess.evaluate

    def recording(self, item, *args, **kwargs):
        conn, self.conn = self.conn, RecordingChannel(self.conn, item.workload.uuid, messages)
        try:
            return evaluate(self, item, *args, **kwargs)
        finally:
            self.conn = conn

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
    return messages, verdicts


def timed_before_built(messages: list) -> dict[str, str]:
    """For each workload, the item whose evaluation brought its first BASELINE, where that came before the item's
    BUILT (the reference timed before the solution was loaded)."""
    first: dict[str, str] = {}
    built: set[str] = set()
    for item, tag, workload in messages:
        if tag == "built":
            built.add(item)
        elif tag == "baseline" and workload not in first and item not in built:
            first[workload] = item
    return first


def worker_of(verdict) -> int:
    return int(verdict.captured_output.split("pid ")[1].split()[0])


def test_a_groups_references_are_timed_before_its_solution_is_loaded_and_its_worker_kept(tmp_path, monkeypatch):
    messages, verdicts = run_recording_messages(tmp_path, monkeypatch)
    assert all(v.outcome.status.value == "PASSED" for v in verdicts)
    # every reference was timed in the first item, before the solution was loaded
    assert timed_before_built(messages) == {"w8": "w8", "w16": "w8", "w32": "w8", "w64": "w8"}
    assert len({worker_of(v) for v in verdicts}) == 1  # known references: the worker stays for the group


def test_a_later_group_of_the_same_solution_gets_a_fresh_worker_before_its_references_are_timed(tmp_path,
                                                                                                 monkeypatch):
    messages, verdicts = run_recording_messages(tmp_path, monkeypatch, split=2)
    assert all(v.outcome.status.value == "PASSED" for v in verdicts)
    assert timed_before_built(messages) == {"w8": "w8", "w16": "w8", "w32": "w32", "w64": "w32"}
    workers = {v.item.workload.uuid: worker_of(v) for v in verdicts}
    assert workers["w8"] == workers["w16"] != workers["w32"] == workers["w64"]
