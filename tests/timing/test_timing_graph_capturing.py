"""``timing/graph.py capturing`` on the CPU, with torch's CUDA calls stood in for: what it asks of the caching
allocators around a capture, and which error it reports when the captured work fails. The capture itself is
checked on a GPU (tests/timing/test_timing_gpu.py, tests/bench/test_replay_gpu.py)."""

from __future__ import annotations

import contextlib

import pytest
import torch

from flashinfer_bench.timing import graph


class FakeGraph:
    def __init__(self, end_error: Exception | None = None) -> None:
        self.calls: list[str] = []
        self.end_error = end_error

    def capture_begin(self, capture_error_mode: str) -> None:
        self.calls.append(f"begin {capture_error_mode}")

    def capture_end(self) -> None:
        self.calls.append("end")
        if self.end_error is not None:
            raise self.end_error


class FakeStream:
    device = torch.device("cuda", 0)


@pytest.fixture
def cuda_calls(monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: calls.append("synchronize"))
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: calls.append("device cache emptied"))
    monkeypatch.setattr(torch.cuda, "stream", lambda stream: contextlib.nullcontext())

    def host_cache_emptied() -> None:
        raise AssertionError("the page-locked host cache was emptied")

    monkeypatch.setattr(torch._C, "_host_emptyCache", host_cache_emptied, raising=False)
    return calls


def test_a_capture_empties_the_device_cache_but_keeps_the_page_locked_host_cache(cuda_calls):
    fake = FakeGraph()
    with graph.capturing(fake, FakeStream()):
        fake.calls.append("work")
    assert cuda_calls == ["synchronize", "device cache emptied"]
    assert fake.calls == ["begin global", "work", "end"]


def test_a_failing_capture_is_ended_and_reports_the_work_s_error_not_the_end_s(cuda_calls):
    fake = FakeGraph(end_error=RuntimeError("capture invalidated"))
    with pytest.raises(ValueError, match="the work failed"), graph.capturing(fake, FakeStream()):
        raise ValueError("the work failed")
    assert fake.calls == ["begin global", "end"]


def test_an_error_ending_a_capture_whose_work_went_well_is_raised(cuda_calls):
    fake = FakeGraph(end_error=RuntimeError("capture invalidated"))
    with pytest.raises(RuntimeError, match="capture invalidated"), graph.capturing(fake, FakeStream()):
        pass
