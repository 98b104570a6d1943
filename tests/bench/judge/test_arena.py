"""Host memory for shipped outputs, reused from session to session (judge/arena.py)."""

import torch
from helpers import SCALE_ADD, evaluation_context

from flashinfer_bench.bench.judge import arena as arenas
from flashinfer_bench.bench.judge.arena import ALIGN, HostArena, give_back, lease
from flashinfer_bench.bench.slot import Slot, TensorLayout


def test_takes_are_aligned_apart_and_grow_into_new_chunks(monkeypatch):
    monkeypatch.setattr(arenas, "CHUNK_BYTES", 256)
    arena = HostArena()
    first, second = arena.take(10), arena.take(100)
    assert first.numel() == 10 and second.numel() == 100
    assert second.data_ptr() - first.data_ptr() == ALIGN  # the next multiple of ALIGN, in the same chunk
    large = arena.take(1000)  # more than a chunk: a chunk of its own
    assert large.numel() == 1000 and len(arena.chunks) == 2
    first.fill_(1), second.fill_(2), large.fill_(3)
    assert int(first.sum()) == 10 and int(second.sum()) == 200  # no take overlaps another


def test_an_arena_handed_back_serves_the_next_session_with_the_same_memory(monkeypatch):
    monkeypatch.setattr(arenas, "_free", [])
    arena = lease()
    where = arena.take(4096).data_ptr()
    give_back(arena)
    again = lease()
    assert again is arena and again.take(4096).data_ptr() == where
    assert lease() is not arena  # leased once at a time


def test_what_the_arenas_keep_is_bounded(monkeypatch):
    monkeypatch.setattr(arenas, "_free", [])
    monkeypatch.setattr(arenas, "CHUNK_BYTES", 1024)
    monkeypatch.setattr(arenas, "KEPT_BYTES_MOST", 3 * 1024)
    one, two = lease(), lease()
    for _ in range(2):
        one.take(1024)
        two.take(1024)
    give_back(one)
    give_back(two)  # 2 chunks kept by the first, so 1 by the second
    assert [a.nbytes for a in arenas._free] == [2048, 1024]


def test_outputs_read_into_an_arena_are_the_bytes_shipped():
    layouts = [TensorLayout("a", torch.float32, (3,)), TensorLayout("b", torch.int64, (2,))]
    slot = Slot(bytearray(64))
    slot.write(0, [torch.tensor([1.0, 2.0, 3.0]), torch.tensor([7, 8])])
    arena = HostArena()
    arena.take(3)  # the next take starts at ALIGN
    tensors, end = slot.read(0, layouts, "cpu", arena.take)
    assert tensors[0].tolist() == [1.0, 2.0, 3.0] and tensors[1].tolist() == [7, 8] and end == 28
    assert tensors[0].data_ptr() == arena.chunks[0].data_ptr() + ALIGN


class NoCheck:
    grouped = False

    def finish(self):
        return None


def test_a_session_hands_its_arena_back_once_its_picked_calls_are_judged(monkeypatch):
    from flashinfer_bench.bench.config import ResolvedEvalConfig
    from flashinfer_bench.bench.judge.schedule import TimedSchedule
    from flashinfer_bench.data import Definition, Workload

    monkeypatch.setattr(arenas, "_free", [])
    config = ResolvedEvalConfig(warmup_runs=1, iterations=4, num_trials=1, rtol=1e-2, atol=1e-2)
    ctx = evaluation_context(Definition.model_validate(SCALE_ADD), Workload(uuid="w", axes={"n": 4}, inputs={}),
                             config)
    schedule = TimedSchedule(ctx, ("timed", 0), 1, 4, 0.5)
    where = schedule.keep(16).data_ptr()
    assert schedule.judge_picked(NoCheck()) is None
    assert schedule.arena is None and schedule.picked == [] and lease().take(16).data_ptr() == where
