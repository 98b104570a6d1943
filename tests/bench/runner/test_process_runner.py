"""Real worker processes on the CPU device: every failure mode is a verdict for its own item only."""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import torch
from helpers import (
    SCALE_ADD,
    child_env,
    live_processes_named,
    python_solution,
    scale_add_set,
    workload_line,
    write_trace_set,
)

from flashinfer_bench.bench import Benchmark, BenchmarkConfig
from flashinfer_bench.bench.runner import isolated_runner, persistent_runner
from flashinfer_bench.bench.runner.device_slot import SPARE_WORKERS
from flashinfer_bench.bench.runner.process import JudgeProcess, WorkerProcess
from flashinfer_bench.bench.wire.judge_worker import CHANNEL_CLOSED
from flashinfer_bench.data import TraceSet

#: Prints a number drawn once per process (a sandboxed worker is pid 1 of its own namespace, so pids tell nothing).
PRINT_PID = ("import builtins, os\n"
             "if not hasattr(builtins, 'process_token'):\n"
             "    builtins.process_token = int.from_bytes(os.urandom(6), 'big')\n"
             "def run(x, y):\n    print('pid', builtins.process_token)\n    return x * 2 + y\n")
BEHAVIOURS = {
    "a_ok": PRINT_PID,
    "b_segfault": "import ctypes\ndef run(x, y):\n    ctypes.string_at(0)\n",
    "c_ok_after_crash": PRINT_PID,
    "d_exits": "import os\ndef run(x, y):\n    print('leaving', flush=True)\n    os._exit(3)\n",
    "e_hangs": "def run(x, y):\n    while True:\n        pass\n",
    "e_hangs_at_import": "while True:\n    pass\ndef run(x, y):\n    return x\n",
    "f_raises": "def run(x, y):\n    raise ValueError('boom')\n",
    "g_wrong": "def run(x, y):\n    return x * 3 + y\n",
    "h_ok_last": PRINT_PID,
}
EXPECTED = {
    "a_ok": "PASSED", "b_segfault": "RUNTIME_ERROR", "c_ok_after_crash": "PASSED", "d_exits": "RUNTIME_ERROR",
    "e_hangs": "TIMEOUT", "e_hangs_at_import": "TIMEOUT", "f_raises": "RUNTIME_ERROR", "g_wrong": "INCORRECT_NUMERICAL", "h_ok_last": "PASSED",
}
CONFIG = BenchmarkConfig(iterations=3, warmup_runs=1, num_trials=2, timeout_seconds=4)


def pids(traces):
    return {t.solution: int(t.evaluation.log.split("pid ")[1].split()[0]) for t in traces if "pid " in t.evaluation.log}


@pytest.mark.parametrize("factory", [persistent_runner, isolated_runner], ids=["persistent", "isolated"])
def test_every_behaviour_gets_its_status_in_one_run(tmp_path, factory):
    trace_set = TraceSet.from_path(scale_add_set(tmp_path, BEHAVIOURS, sizes=(32,)))
    benchmark = Benchmark(trace_set, CONFIG, runner_factory=lambda c: factory(["cpu"], timeout_seconds=c.timeout_seconds))
    result = benchmark.run_all(save_results=False)
    traces = result.traces["scale_add"]
    assert {t.solution: t.evaluation.status.value for t in traces} == EXPECTED
    by_name = {t.solution: t.evaluation for t in traces}
    assert "SIGSEGV" in by_name["b_segfault"].log
    assert "exited with status 3" in by_name["d_exits"].log and "leaving" in by_name["d_exits"].log
    assert "ValueError: boom" in by_name["f_raises"].log
    assert "no result within the 4 s timeout" in by_name["e_hangs"].log
    assert "not built within 4 s" in by_name["e_hangs_at_import"].log  # the build's deadline, not the run's
    assert by_name["a_ok"].performance.latency_ms > 0
    seen = pids(traces)
    assert len(set(seen.values())) == len(seen) == 3  # a worker of its own for each solution


def test_dead_worker_is_noticed_at_once(tmp_path):
    trace_set = TraceSet.from_path(scale_add_set(tmp_path, {"segfault": BEHAVIOURS["b_segfault"]}, sizes=(8,)))
    config = CONFIG.model_copy(update={"timeout_seconds": 120})
    runner = persistent_runner(["cpu"], timeout_seconds=120)
    try:
        runner.slots[0].environment()  # worker started and ready
        started = time.monotonic()
        Benchmark(trace_set, config, runner_factory=lambda c: runner).run_all(save_results=False)
        assert time.monotonic() - started < 60  # far below the 120 s timeout
    finally:
        runner.close()


def test_environment_is_recorded(tmp_path):
    trace_set = TraceSet.from_path(scale_add_set(tmp_path, {"ok": "def run(x, y):\n    return x * 2 + y\n"}, sizes=(8,)))
    result = Benchmark(trace_set, CONFIG).run_all(save_results=False)
    environment = result.traces["scale_add"][0].evaluation.environment
    expected = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    assert environment.hardware == expected
    import platform

    import flashinfer_bench

    assert (environment.libs["torch"], environment.libs["flashinfer_bench"], environment.libs["python"]) == (
        torch.__version__, flashinfer_bench.__version__, platform.python_version())


def test_output_capture_is_bounded(tmp_path):
    noisy = "import sys\ndef run(x, y):\n    print('x' * 1_000_000)\n    sys.stderr.write('tail-marker\\n')\n    return x * 2 + y\n"
    trace_set = TraceSet.from_path(scale_add_set(tmp_path, {"noisy": noisy}, sizes=(8,)))
    evaluation = Benchmark(trace_set, CONFIG).run_all(save_results=False).traces["scale_add"][0].evaluation
    assert evaluation.status.value == "PASSED"
    assert len(evaluation.log) < 40_000 and "bytes of output omitted" in evaluation.log
    assert "tail-marker" in evaluation.log


def test_definition_without_solutions_runs_nothing(tmp_path):
    trace_set = TraceSet.from_path(scale_add_set(tmp_path, {}, sizes=(8,)))
    assert trace_set.definitions["scale_add"].name == SCALE_ADD["name"]
    assert Benchmark(trace_set, CONFIG).run_all(save_results=True).traces == {}


def test_workloads_are_spread_over_devices_and_solutions_over_workers(tmp_path):
    """Two device slots (the CPU twice stands in for two GPUs): every item is run once, each group on one slot,
    each solution of a group in a worker of its own."""
    trace_set = TraceSet.from_path(scale_add_set(tmp_path, {"a": PRINT_PID, "b": PRINT_PID}, sizes=(8, 16, 32, 64)))
    runner = persistent_runner(["cpu", "cpu"], timeout_seconds=30)
    groups = Benchmark(trace_set, CONFIG).work_groups(devices=runner.parallelism)
    slot_of, verdicts = {}, []

    def record(verdict):
        verdicts.append(verdict)
        slot_of[(verdict.item.workload.uuid, verdict.item.solution.name)] = threading.get_ident()

    with runner:
        runner.run(groups, record)
    assert sorted(slot_of) == sorted((f"w{n}", s) for n in (8, 16, 32, 64) for s in "ab")
    assert all(v.outcome.status.value == "PASSED" for v in verdicts)
    for group in groups:  # a group stays on one slot
        assert len({slot_of[(i.workload.uuid, i.solution.name)] for i in group}) == 1
    assert len(set(slot_of.values())) == 2  # both slots worked
    pid_of = {(v.item.workload.uuid, v.item.solution.name): int(v.captured_output.split("pid ")[1].split()[0])
              for v in verdicts}
    for group in groups:  # one worker per solution per group
        workers = {(i.solution.name, pid_of[(i.workload.uuid, i.solution.name)]) for i in group}
        assert len(workers) == len({i.solution.name for i in group}) == 2


@pytest.mark.parametrize("factory", [persistent_runner, isolated_runner], ids=["persistent", "isolated"])
def test_a_retired_worker_stops_in_the_background_but_its_solutions_next_item_waits(tmp_path, monkeypatch,
                                                                                       factory):
    """Persistent: solution b's item starts while a's retired worker is still being stopped. Isolated: the next
    item of the same solution starts only once its retired worker is gone (and its build moved into the cache)."""
    events = []
    clean_up, evaluate = WorkerProcess.clean_up, JudgeProcess.evaluate

    def slow_clean_up(self, built=None):
        if built is not None:  # a retired (or, at the end, the active) worker; spares have built nothing
            time.sleep(0.5)
            clean_up(self, built)
            events.append(("stopped", built.name))
        else:
            clean_up(self, built)

    def logged_evaluate(self, item, *args, **kwargs):
        events.append(("evaluating", item.solution.name))
        return evaluate(self, item, *args, **kwargs)

    monkeypatch.setattr(WorkerProcess, "clean_up", slow_clean_up)
    monkeypatch.setattr(JudgeProcess, "evaluate", logged_evaluate)
    solutions = {"a": PRINT_PID, "b": PRINT_PID} if factory is persistent_runner else {"a": PRINT_PID}
    trace_set = TraceSet.from_path(scale_add_set(tmp_path, solutions, sizes=(8,) if len(solutions) == 2 else (8, 16)))
    runner = factory(["cpu"], timeout_seconds=30)
    result = Benchmark(trace_set, CONFIG, runner_factory=lambda c: runner).run_all(save_results=False)
    assert all(t.evaluation.status.value == "PASSED" for t in result.traces["scale_add"])
    if factory is persistent_runner:
        assert events[:3] == [("evaluating", "a"), ("evaluating", "b"), ("stopped", "a")]
    else:
        assert events[:3] == [("evaluating", "a"), ("stopped", "a"), ("evaluating", "a")]
    assert not runner.slots[0].retiring  # closing the runner waited for every retirement
    assert live_processes_named("fib-worker") == []


@pytest.mark.parametrize("ready", [False, True], ids=["during_start_up", "once_ready"])
def test_a_worker_that_dies_before_it_is_attached_is_replaced(tmp_path, monkeypatch, ready):
    """The worker about to become active dies during its start-up, or once it said it was ready (its message still
    in its channel for the judge to read): either way another takes the item, and the solution is not blamed. The
    death is complete before the run: a SIGKILL under load can take effect later, during the item, which no runner
    can tell from the solution's doing (it failed so under load before it was waited for)."""
    trace_set = TraceSet.from_path(scale_add_set(tmp_path, {"ok": PRINT_PID}, sizes=(8,)))
    runner = persistent_runner(["cpu"], timeout_seconds=30)
    doomed = runner.slots[0].spares[0]
    assert not ready or doomed.started(60.0)
    doomed.process.kill()
    doomed.process.join()
    offered = []
    attach = JudgeProcess.attach
    monkeypatch.setattr(JudgeProcess, "attach", lambda self, worker, timeout: (
        offered.append(worker), attach(self, worker, timeout))[1])
    result = Benchmark(trace_set, CONFIG, runner_factory=lambda c: runner).run_all(save_results=False)
    assert result.traces["scale_add"][0].evaluation.status.value == "PASSED", result.traces["scale_add"][0].evaluation.log
    assert offered[0] is doomed and len(offered) == 2  # offered first, then the next spare took the item


def test_spare_workers_are_started_ahead_and_replaced_as_they_are_attached(tmp_path, monkeypatch):
    trace_set = TraceSet.from_path(scale_add_set(tmp_path, {"a": PRINT_PID, "b": PRINT_PID}, sizes=(8,)))
    runner = persistent_runner(["cpu"], timeout_seconds=30)
    slot = runner.slots[0]
    started = list(slot.spares)
    attached = []
    evaluate = JudgeProcess.evaluate

    def counted(self, item, worker, *args, **kwargs):
        attached.append((worker, len(slot.spares)))
        return evaluate(self, item, worker, *args, **kwargs)

    monkeypatch.setattr(JudgeProcess, "evaluate", counted)
    result = Benchmark(trace_set, CONFIG, runner_factory=lambda c: runner).run_all(save_results=False)
    assert [t.evaluation.status.value for t in result.traces["scale_add"]] == ["PASSED", "PASSED"]
    assert len(started) == SPARE_WORKERS + 1  # the first item's worker too
    # One worker per solution, the first a spare started with the runner, each later one replaced as it was attached.
    workers = [worker for worker, _ in attached]
    assert workers[0] is started[0] and len(set(workers)) == 2
    assert [count for _, count in attached] == [SPARE_WORKERS, SPARE_WORKERS]


def test_every_worker_sees_the_blobs_of_the_whole_run_from_its_start(tmp_path, monkeypatch):
    """Blob files of their own per workload: each item needs a path the items before did not show. The view is
    widened once, ahead of the items, so no spare is replaced halfway through the run (the next attach would wait
    for its start-up)."""
    from safetensors.torch import save_file

    from flashinfer_bench.bench.runner.device_slot import DeviceSlot

    root = tmp_path / "set"
    lines = []
    for name in ("w1", "w2"):
        lines.append(workload_line("scale_add", name, {"n": 4},
                                   {"x": {"type": "safetensors", "path": f"{name}.safetensors", "tensor_key": "x"}}))
    root = write_trace_set(root, [SCALE_ADD], [python_solution("a", PRINT_PID), python_solution("b", PRINT_PID)],
                           {"scale_add": lines})
    blobs = []
    for name in ("w1", "w2"):
        save_file({"x": torch.ones(4)}, str(root / f"{name}.safetensors"))
        blobs.append(str((root / f"{name}.safetensors").resolve()))
    policies, attached = {}, []
    new_worker, evaluate = DeviceSlot._new_worker, JudgeProcess.evaluate

    def recorded(self):
        worker = new_worker(self)
        policies[worker] = self.policy
        return worker

    def evaluated(self, item, worker, *args, **kwargs):
        attached.append(worker)
        return evaluate(self, item, worker, *args, **kwargs)

    monkeypatch.setattr(DeviceSlot, "_new_worker", recorded)
    monkeypatch.setattr(JudgeProcess, "evaluate", evaluated)
    result = Benchmark(TraceSet.from_path(root), CONFIG).run_all(save_results=False)
    assert {t.evaluation.status.value for t in result.traces["scale_add"]} == {"PASSED"}
    assert len(attached) == 4 and len(set(attached)) == 2  # persistent: one worker per solution
    for worker in attached:
        assert all(blob in policies[worker].read_only for blob in blobs)
    # The first worker and the spares started with the runner, then again once the run's view was known, then one
    # per attach after the first.
    assert len(policies) == 2 * (SPARE_WORKERS + 1) + 1


def test_torch_settings_changed_by_a_solution_do_not_reach_the_next(tmp_path):
    # "b_ok" builds its output with the default dtype, so a leaked float64 default would make it INCORRECT_DTYPE.
    solutions = [
        python_solution("a_changes_defaults", "import torch\ndef run(x, y):\n"
                        "    torch.set_default_dtype(torch.float64)\n    torch.set_grad_enabled(False)\n"
                        "    return (x * 2 + y).float()\n"),
        python_solution("b_ok", "import torch\ndef run(x, y):\n    return torch.zeros(x.shape, device=x.device) + x * 2 + y\n"),
    ]
    root = write_trace_set(tmp_path, [SCALE_ADD], solutions, {"scale_add": [workload_line("scale_add", "w", {"n": 8})]})
    result = Benchmark(TraceSet.from_path(root), CONFIG).run_all(save_results=False)
    assert {t.solution: t.evaluation.status.value for t in result.traces["scale_add"]} == {
        "a_changes_defaults": "PASSED", "b_ok": "PASSED"}


#: Finds the worker's channel and keeps announcing "built" (pickled, as the channel once spoke, and as the JSON
#: it speaks now), which used to restart the parent's deadline.
RESTARTS_DEADLINE = (
    "import gc, pickle, time\n"
    "from multiprocessing.connection import Connection\n"
    "def run(x, y):\n"
    "    channels = [o for o in gc.get_objects() if isinstance(o, Connection)]\n"
    "    for _ in range(24):\n"
    "        for channel in channels:\n"
    "            for message in (pickle.dumps(('built', None)), b'{\"op\":\"built\"}'):\n"
    "                try:\n"
    "                    channel.send_bytes(message)\n"
    "                except Exception:\n"
    "                    pass\n"
    "        time.sleep(0.5)\n"
    "    return x * 2 + y\n"
)


@pytest.mark.parametrize("factory", [persistent_runner, isolated_runner], ids=["persistent", "isolated"])
def test_a_solution_cannot_extend_its_own_deadline(tmp_path, factory):
    trace_set = TraceSet.from_path(scale_add_set(tmp_path, {"restarts": RESTARTS_DEADLINE}, sizes=(8,)))
    # 8 s: a GPU machine's worker, busy beside 11 other test processes, ran out of 3 s once (an isolated runner).
    config = CONFIG.model_copy(update={"timeout_seconds": 8, "num_trials": 1})
    benchmark = Benchmark(trace_set, config, runner_factory=lambda c: factory(["cpu"], timeout_seconds=c.timeout_seconds))
    evaluation = benchmark.run_all(save_results=False).traces["scale_add"][0].evaluation
    # The call takes 12 s: once it PASSED. Now the judge reads the first forged message as a broken protocol.
    assert evaluation.status.value == "RUNTIME_ERROR" and "broke the protocol" in evaluation.log, evaluation.log


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_hanging_worker_and_its_children_die_with_a_killed_cli(tmp_path):
    # The worker is pid 1 of its own namespace: it names itself and a detached child it leaves, and the test
    # finds both by that name.
    marker = f"fib{os.getpid() % 100000}hang"
    hangs = ("import ctypes, os\n"
             "def run(x, y):\n"
             f"    ctypes.CDLL(None).prctl(15, {marker.encode()!r})\n"
             "    if os.fork() == 0:\n"
             "        os.setsid()\n"
             "        ctypes.CDLL(None).prctl(1, 0)\n"
             "        while True:\n            pass\n"
             "    while True:\n        pass\n")
    root = scale_add_set(tmp_path / "set", {"hangs": hangs}, sizes=(8,))
    cli = subprocess.Popen([sys.executable, "-m", "flashinfer_bench.cli.main", "run", "--local", str(root),
                            "--timeout", "300"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=child_env())
    try:
        deadline = time.monotonic() + 120
        while len(live_processes_named(marker)) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(live_processes_named(marker)) == 2
        cli.send_signal(signal.SIGKILL)
        cli.wait(timeout=30)
        deadline = time.monotonic() + 30
        while live_processes_named(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not live_processes_named(marker)
    finally:
        cli.kill()


def test_workers_may_write_their_scratch_only_and_cannot_see_the_logs(tmp_path):
    from flashinfer_bench.bench.runner.process_pool import worker_policy

    policy = worker_policy(hidden=[str(tmp_path / "logs")])
    assert policy.confine_writes and policy.writable == ()  # each worker gets its own scratch directory
    assert str((tmp_path / "logs").resolve()) in policy.hidden


def test_workers_may_write_profiles_only_where_profiles_were_asked_for(tmp_path, monkeypatch):
    import pstats

    from flashinfer_bench.bench.process_setup import PROFILE_DIR_ENV, profiled
    from flashinfer_bench.bench.runner.process_pool import worker_policy

    monkeypatch.setenv(PROFILE_DIR_ENV, str(tmp_path))
    assert worker_policy(hidden=[]).writable == (str(tmp_path.resolve()),)
    with profiled("worker"):
        sum(range(1000))
    written = list(tmp_path.iterdir())
    assert len(written) == 1 and written[0].name.startswith("worker-") and written[0].suffix == ".prof"
    assert pstats.Stats(str(written[0])).total_calls > 0  # complete: written aside, then renamed
    monkeypatch.setenv(PROFILE_DIR_ENV, str(tmp_path / "missing"))
    assert worker_policy(hidden=[]).writable == ()


@pytest.mark.parametrize("judged", ["the worker broke the protocol: sent 'timed' where 'called' was due",
                                    CHANNEL_CLOSED, None])
def test_a_worker_gone_before_its_judge_s_word_gets_the_judge_s_verdict_where_the_judge_knows_more(judged):
    """A worker that forges a message sees its channel closed by the judge and exits (status 0) before the judge's
    result reaches the parent: the parent takes the judge's verdict, not the exit; where the judge only lost the
    channel (or says nothing), the exit status is what the log tells. The cgroup's notes, read once, follow either."""
    import multiprocessing
    from types import SimpleNamespace

    from flashinfer_bench.bench.config import BenchmarkConfig as Config
    from flashinfer_bench.bench.runner.base import WorkOutcome
    from flashinfer_bench.bench.runner.process import protocol
    from flashinfer_bench.bench.wire.parent_judge import WorkItem
    from flashinfer_bench.data import Definition, EvaluationStatus, Solution, Workload

    definition = Definition.model_validate(SCALE_ADD)
    item = WorkItem(definition, Solution.model_validate(python_solution("s", PRINT_PID)),
                    Workload(uuid="w", axes={"n": 8}, inputs={}), Config().resolve(definition), None)
    parent_end, judge_end = multiprocessing.Pipe()
    gone_read, gone_write = os.pipe()
    os.close(gone_write)  # the worker's sentinel: ready at once
    limits = ["\n[the worker reached its cgroup limit on processes: a fork or thread was refused]"]
    worker = SimpleNamespace(stage=lambda item: None, limits_reached=lambda: limits.pop() if limits else "",
                             items_done=0, process=SimpleNamespace(sentinel=gone_read, exitcode=0, is_alive=lambda: False,
                                                                   join=lambda timeout=None: None))
    judge_alive = os.pipe()  # the judge's sentinel: never ready
    judge = JudgeProcess.__new__(JudgeProcess)
    judge.conn, judge.device, judge.kill = parent_end, "cpu", lambda: None
    judge.process = SimpleNamespace(sentinel=judge_alive[0], is_alive=lambda: True, exitcode=None)

    def judge_answers() -> None:
        judge_end.recv()  # the item
        time.sleep(0.3)  # the worker's exit is seen first
        if judged is not None:
            judge_end.send((protocol.RESULT, WorkOutcome(EvaluationStatus.RUNTIME_ERROR, log=judged, retire=True)))
        else:
            judge_end.close()

    answering = threading.Thread(target=judge_answers)
    answering.start()
    outcome = judge.evaluate(item, worker, os.devnull, 10.0, lambda uuid, timing: None)
    answering.join()
    for fd in (gone_read, *judge_alive):
        os.close(fd)
    assert outcome.status == EvaluationStatus.RUNTIME_ERROR and outcome.retire
    limit = "\n[the worker reached its cgroup limit on processes: a fork or thread was refused]"  # told once, kept
    if judged is not None and "broke the protocol" in judged:
        assert outcome.log == judged + limit
    else:
        assert outcome.log == "worker process exited with status 0" + limit
