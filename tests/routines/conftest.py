"""Shared helpers for the routine-benchmark tests (tiny sizes, CPU only)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

#: Enough samples for an interval narrower than their range (below six samples it is the range).
FAKE_SAMPLES_MS = [1.0 + 0.05 * i for i in range(40)]


@dataclass
class FakeTiming:
    median_ms: float = 2.0
    std_ms: float = 0.1
    method: str = "fake_clock"
    device: str = "cpu"
    samples_ms: list[float] = field(default_factory=lambda: list(FAKE_SAMPLES_MS))

    @property
    def stats(self):
        from flashinfer_bench.timing.stats import summarize

        return summarize(self.samples_ms)


class FakeTimer:
    """Records each call's keyword arguments and calls the timed function once (so failures surface)."""

    def __init__(self) -> None:
        self.calls: list[dict] = []
        self.samples_ms = list(FAKE_SAMPLES_MS)

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
