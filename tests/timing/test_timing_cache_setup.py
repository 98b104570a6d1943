"""Choosing the cache policy (pure logic; the device's L2 size is faked)."""

import pytest
import torch

from flashinfer_bench.timing import api
from flashinfer_bench.timing.l2 import MAX_ROTATION_COPIES, copies_needed
from flashinfer_bench.timing.options import TimingOptions
from flashinfer_bench.timing.result import FLUSH_L2, ROTATE_BUFFERS, WARM

L2 = 1000
DEV = torch.device("cpu")


@pytest.fixture(autouse=True)
def small_l2(monkeypatch):
    monkeypatch.setattr(api, "l2_cache_bytes", lambda dev: L2)


def setup(args, cold=False, rotate=False, graph=False, notes=None):
    options = TimingOptions(cold_l2_cache=cold, rotate_buffers=rotate, use_cuda_graph=graph)
    return api._cache_setup(DEV, args, {}, options, [] if notes is None else notes)


def big_args():
    return (torch.zeros(250, dtype=torch.float32),)  # 1000 bytes -> ceil(2000/1000)+1 = 3 copies


def test_warm_by_default():
    policy, sets = setup(big_args())
    assert policy == WARM and len(sets) == 1


def test_cold_without_graph_flushes():
    policy, sets = setup(big_args(), cold=True)
    assert policy == FLUSH_L2 and len(sets) == 1


@pytest.mark.parametrize(
    ("cold", "rotate", "graph"), [(False, True, False), (True, False, True), (True, True, True)]
)
def test_rotation_when_asked_or_cold_under_a_graph(cold, rotate, graph):
    notes = []
    policy, sets = setup(big_args(), cold, rotate, graph, notes)
    assert policy == ROTATE_BUFFERS and len(sets) == 3 and notes == []


def test_rotation_of_tiny_args_falls_back_to_flush_with_warning():
    tiny = (torch.zeros(1, dtype=torch.int8),)
    notes = []
    policy, sets = setup(tiny, rotate=True, notes=notes)
    assert policy == FLUSH_L2 and len(sets) == 1
    assert len(notes) == 1 and "rotate_buffers" in notes[0]


def test_rotation_needs_at_most_the_copies_allowed():
    just_enough = (torch.zeros(L2 * 2 // MAX_ROTATION_COPIES + 1, dtype=torch.int8),)
    assert copies_needed(just_enough[0].nbytes, L2) <= MAX_ROTATION_COPIES
    policy, sets = setup(just_enough, rotate=True)
    assert policy == ROTATE_BUFFERS and len(sets) == copies_needed(just_enough[0].nbytes, L2)


def test_cold_graph_with_tiny_args_flushes_silently():
    notes = []
    policy, _ = setup((), cold=True, graph=True, notes=notes)
    assert policy == FLUSH_L2 and notes == []
