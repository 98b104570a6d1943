import torch

from flashinfer_bench.timing import lead_in


def test_lead_in_is_the_flush_when_cold_and_the_spin_otherwise(monkeypatch):
    calls = []
    monkeypatch.setattr(lead_in, "flush_l2", lambda device: calls.append(("flush", device)))
    monkeypatch.setattr(lead_in, "spin", lambda: calls.append(("spin",)))
    dev = torch.device("cuda", 1)
    lead_in.lead_in_step(dev, flush=True)(0)
    lead_in.lead_in_step(dev, flush=False)(1)
    assert calls == [("flush", dev), ("spin",)]
