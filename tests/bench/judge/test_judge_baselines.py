"""The judge keeps few baselines, and fewer when they are large."""

import torch

from flashinfer_bench.bench.evaluators.evaluator import Baseline
from flashinfer_bench.bench.judge import main as judge
from flashinfer_bench.bench.judge.main import Judge, tensor_bytes


def baseline(mib: int) -> Baseline:
    inputs = [[torch.empty(mib << 20, dtype=torch.uint8)]]
    return Baseline(inputs=inputs, outputs=[(torch.empty(0),)], written=[{}])


def test_tensor_bytes_counts_every_tensor():
    assert tensor_bytes(baseline(3)) == 3 << 20
    assert tensor_bytes({"a": [torch.empty(2, dtype=torch.float32)], "b": 1}) == 8


def test_old_baselines_go_by_count_and_by_bytes(monkeypatch):
    monkeypatch.setattr(judge, "BASELINE_BYTES_KEPT", (judge.BASELINES_KEPT + 2) << 20)
    w = Judge(conn=None, device="cpu")
    keys = [(str(k),) for k in range(judge.BASELINES_KEPT + 1)]
    for key in keys:
        w.baselines[key] = baseline(1)
        w.evict_baselines(keep_newest=True)
    assert list(w.baselines) == keys[1:]
    w.baselines[("big",)] = baseline(16)
    w.evict_baselines(keep_newest=True)
    assert list(w.baselines) == [("big",)]  # the newest stays whatever its size
    w.evict_baselines(keep_newest=False)  # before the next workload's inputs are drawn
    assert not w.baselines
