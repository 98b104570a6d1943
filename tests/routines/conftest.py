"""Shared helpers for the routine-benchmark tests (tiny sizes, CPU only)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest


@dataclass
class FakeTiming:
    median_ms: float = 2.0
    std_ms: float = 0.1
    method: str = "fake_clock"
    device: str = "cpu"
    samples_ms: list[float] = field(default_factory=lambda: [1.9, 2.0, 2.1])


class FakeTimer:
    """Records each call's keyword arguments and calls the timed function once (so failures surface)."""

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def __call__(self, fn, **kwargs):
        self.calls.append(kwargs)
        fn()
        return FakeTiming()


@pytest.fixture
def fake_timer() -> FakeTimer:
    return FakeTimer()


@pytest.fixture(autouse=True)
def _on_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests describe the CPU (a fake flashinfer stands in for the GPU); keep them there on a GPU machine too."""
    import torch

    from flashinfer_bench.routines import runner

    monkeypatch.setattr(runner, "pick_device", lambda: torch.device("cpu"))
