"""The picked calls of a session, judged after its loop (judge/picked.py; which are drawn again:
tests/bench/evaluators/test_evaluators.py)."""

import pytest
import torch
from helpers import evaluation_context

from flashinfer_bench.bench.config import ResolvedEvalConfig
from flashinfer_bench.bench.judge.arena import HostArena
from flashinfer_bench.bench.judge.picked import PickedCall, on_device
from flashinfer_bench.data import Definition, Workload

CONFIG = ResolvedEvalConfig(warmup_runs=1, iterations=4, num_trials=1, rtol=1e-2, atol=1e-2)
#: Outputs of several types, one of an odd number of bytes before the others: each call's later outputs start
#: off their element size's alignment in a flat copy.
MIXED = Definition.model_validate({
    "name": "mixed_out", "op_type": "toy", "axes": {"n": {"type": "var"}},
    "inputs": {"x": {"shape": ["n"], "dtype": "float32"}},
    "outputs": {"flag": {"shape": ["n"], "dtype": "bool"}, "half": {"shape": ["n"], "dtype": "bfloat16"},
                "idx": {"shape": ["n"], "dtype": "int64"}},
    "reference": "import torch\ndef run(x):\n    return x > 0, x.bfloat16(), x.long()\n",
})


def context(device: str):
    return evaluation_context(MIXED, Workload(uuid="w", axes={"n": 5}, inputs={}), CONFIG, device=device)


def picked_calls(count: int) -> list[PickedCall]:
    return [PickedCall(k, k, (torch.arange(5) % 2 == k % 2, torch.arange(5, dtype=torch.bfloat16) * k,
                              torch.arange(5) + 10 * k)) for k in range(count)]


def test_picked_outputs_on_the_cpu_are_the_host_copies():
    calls = picked_calls(3)
    assert all(torch.equal(a, b) for call, moved in zip(calls, on_device(context("cpu"), calls), strict=True)
               for a, b in zip(call.outputs, moved, strict=True))


@pytest.mark.gpu
def test_picked_outputs_kept_in_a_page_locked_arena_reach_the_device_byte_for_byte():
    arena = HostArena()
    calls = []
    for call in picked_calls(7):  # kept in the arena, as shipments are (judge/solution.py read_outputs)
        kept = []
        for tensor in call.outputs:
            place = arena.take(tensor.nbytes).view(tensor.dtype).reshape(tensor.shape)
            place.copy_(tensor)
            kept.append(place)
        calls.append(PickedCall(call.index, call.key, tuple(kept)))
    assert all(chunk.is_pinned() for chunk in arena.chunks)
    moved = on_device(context("cuda"), calls)
    torch.cuda.synchronize()
    for call, outputs in zip(picked_calls(7), moved, strict=True):
        for host, device in zip(call.outputs, outputs, strict=True):
            assert device.device.type == "cuda" and device.dtype == host.dtype and device.shape == host.shape
            assert torch.equal(device.cpu(), host)


def test_a_session_whose_check_raises_still_hands_its_arena_back(monkeypatch):
    from flashinfer_bench.bench.judge import arena as arenas
    from flashinfer_bench.bench.judge.schedule import TimedSchedule

    monkeypatch.setattr(arenas, "_free", [])
    schedule = TimedSchedule(context("cpu"), ("timed", 0), warmup=1, iterations=4, probability=1.0)
    schedule.keep(64)
    schedule.picked = picked_calls(2)

    class Failing:  # a reference that fails on a picked call's inputs
        grouped = False

        def known(self, key):
            return None

        def expected(self, key, inputs):
            raise RuntimeError("the reference failed")

        def check(self, calls):
            return None

        def finish(self):
            return None

    with pytest.raises(RuntimeError, match="the reference failed"):
        schedule.judge_picked(Failing())
    assert schedule.arena is None and schedule.picked == [] and len(arenas._free) == 1
