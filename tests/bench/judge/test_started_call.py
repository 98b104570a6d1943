"""A correctness call started ahead (judge/remote.py ``RemoteSolution.start_call``), in a real worker on the CPU: the
call that asks for the same takes up its answer, any other settles it first, and its time on the judge's clock ends
when its answer arrived, not when the judge, busy meanwhile, read it."""

import os
import time

import pytest
import torch
from helpers import SCALE_ADD, evaluation_context, python_solution

from flashinfer_bench.bench.config import BenchmarkConfig
from flashinfer_bench.bench.judge.remote import RemoteSolution
from flashinfer_bench.bench.judge.slots import SlotKeeper
from flashinfer_bench.bench.judge.solution import CallArgs
from flashinfer_bench.bench.runner.process import WorkerProcess
from flashinfer_bench.bench.runner.process_pool import worker_policy
from flashinfer_bench.bench.wire.failures import CallFailed
from flashinfer_bench.bench.wire.judge_worker import Built, Call, Load, Ready, Stop, WorkerChannel
from flashinfer_bench.data import Definition, Solution, Workload

DEFINITION = Definition.model_validate(SCALE_ADD)
WORKLOAD = Workload(uuid="w", axes={"n": 1024}, inputs={})
HONEST = "import time\ndef run(x, y):\n    time.sleep(0.05)\n    return x * 2 + y\n"
RAISES = "def run(x, y):\n    raise RuntimeError('no')\n"


class CountedChannel(WorkerChannel):
    """The judge's end, counting the calls it asks for."""

    calls = 0

    def send(self, message):
        self.calls += isinstance(message, Call)
        super().send(message)


@pytest.fixture
def remote_of(tmp_path):
    started = []

    def make(source: str) -> RemoteSolution:
        ctx = evaluation_context(DEFINITION, WORKLOAD, BenchmarkConfig.default().resolve(DEFINITION))
        worker = WorkerProcess("cpu", tmp_path / f"cache{len(started)}", worker_policy(()))
        channel = CountedChannel(worker.handover())
        started.append((worker, channel))
        channel.receive(Ready)
        solution = Solution.model_validate(python_solution("s", source))
        channel.send(Load(calibration=False, definition=DEFINITION.model_dump_json(),
                          solution=solution.model_dump_json(), workload=WORKLOAD.model_dump_json(),
                          trace_set_root=None))
        log = os.open(os.devnull, os.O_WRONLY)
        channel.send_fd(log)
        os.close(log)
        channel.receive(Built)
        return RemoteSolution(ctx, channel, SlotKeeper(channel))

    yield make
    for worker, channel in started:
        channel.send(Stop())
        worker.kill()


def expected(remote: RemoteSolution, seed: int) -> torch.Tensor:
    x, y = remote.ctx.inputs(seed)
    return x * 2 + y


def test_the_call_asked_for_takes_up_the_started_one_timed_until_its_answer_arrived(remote_of):
    remote = remote_of(HONEST)
    seed = remote.ctx.trial_seed(0)
    remote.start_call(CallArgs(seed))
    started = remote.started
    deadline = time.monotonic() + 60
    while started.arrived_at is None and time.monotonic() < deadline:  # the judge's own work, until the answer
        time.sleep(0.01)                                                # is there and a while after
    assert started.arrived_at is not None
    time.sleep(0.5)
    asked_at = time.perf_counter()
    result = remote.call(seed)
    assert remote.channel.calls == 1 and remote.started is None
    torch.testing.assert_close(result.outputs[0][0], expected(remote, seed))
    assert remote.latest_call_ms == pytest.approx((started.arrived_at - started.sent_at) * 1e3)
    assert remote.latest_call_ms < (asked_at - started.sent_at) * 1e3 - 400


def test_a_call_for_other_inputs_settles_the_started_one_first(remote_of):
    remote = remote_of(HONEST)
    first, second = remote.ctx.trial_seed(0), remote.ctx.trial_seed(1)
    remote.start_call(CallArgs(first))
    result = remote.call(second)
    assert remote.channel.calls == 2
    torch.testing.assert_close(result.outputs[0][0], expected(remote, second))
    # The same seed with an input sent back is another call too.
    remote.start_call(CallArgs(first))
    result = remote.call(first, return_inputs=["x"])
    assert remote.channel.calls == 4
    torch.testing.assert_close(result.returned["x"], remote.ctx.inputs(first)[0])


def test_a_failure_of_a_call_no_one_took_up_is_dropped_and_the_call_asked_for_meets_it(remote_of):
    remote = remote_of(RAISES)
    remote.start_call(CallArgs(remote.ctx.trial_seed(0)))
    remote.settle()
    assert remote.started is None
    with pytest.raises(CallFailed, match="no"):
        remote.call(remote.ctx.trial_seed(0))


def test_answered_within_waits_at_most_so_long_and_a_start_of_the_same_call_lets_it_go_on(remote_of):
    remote = remote_of("import time\ndef run(x, y):\n    time.sleep(1.0)\n    return x * 2 + y\n")
    seed = remote.ctx.trial_seed(0)
    remote.start_call(CallArgs(seed))
    assert not remote.answered_within(50)
    remote.start_call(CallArgs(seed))  # the same call: no second one
    assert remote.answered_within(60_000)  # returns once the answer is there
    torch.testing.assert_close(remote.call(seed).outputs[0][0], expected(remote, seed))
    assert remote.channel.calls == 1 and remote.latest_call_ms >= 1000
    assert remote.answered_within(0)  # nothing started
