"""Choosing the cache policy (pure logic; the device's L2 size is faked)."""

import pytest
import torch

from flashinfer_bench.timing import api
from flashinfer_bench.timing.l2 import MAX_ROTATION_COPIES
from flashinfer_bench.timing.result import FLUSH_L2, ROTATE_BUFFERS, WARM

L2 = 1000
DEV = torch.device("cpu")


@pytest.fixture(autouse=True)
def small_l2(monkeypatch):
    monkeypatch.setattr(api, "l2_cache_bytes", lambda dev: L2)


def big_args():
    return (torch.zeros(250, dtype=torch.float32),)  # 1000 bytes -> ceil(2000/1000)+1 = 3 copies


def test_warm_by_default():
    policy, sets = api._cache_setup(DEV, big_args(), {}, False, False, False, [])
    assert policy == WARM and len(sets) == 1


def test_cold_without_graph_flushes():
    policy, sets = api._cache_setup(DEV, big_args(), {}, True, False, False, [])
    assert policy == FLUSH_L2 and len(sets) == 1


@pytest.mark.parametrize(
    ("cold", "rotate", "graph"), [(False, True, False), (True, False, True), (True, True, True)]
)
def test_rotation_when_asked_or_cold_under_a_graph(cold, rotate, graph):
    notes = []
    policy, sets = api._cache_setup(DEV, big_args(), {}, cold, rotate, graph, notes)
    assert policy == ROTATE_BUFFERS and len(sets) == 3 and notes == []


def test_rotation_of_tiny_args_falls_back_to_flush_with_warning():
    tiny = (torch.zeros(1, dtype=torch.int8),)  # would need 2001 copies
    assert 2001 > MAX_ROTATION_COPIES
    notes = []
    policy, sets = api._cache_setup(DEV, tiny, {}, False, True, False, notes)
    assert policy == FLUSH_L2 and len(sets) == 1
    assert len(notes) == 1 and "rotate_buffers" in notes[0]


def test_cold_graph_with_tiny_args_flushes_silently():
    notes = []
    policy, _ = api._cache_setup(DEV, (), {}, True, False, True, notes)
    assert policy == FLUSH_L2 and notes == []
