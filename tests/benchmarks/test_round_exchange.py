"""benchmarks/round_exchange.py: its split of a replayed round's window, on stamps made up here (the rounds it
stamps are replayed from CUDA graphs, so its run needs the GPU machine)."""

import pytest
from helpers import load_benchmark


def load_script(monkeypatch):
    return load_benchmark("round_exchange", monkeypatch)


def test_a_rounds_window_is_its_device_time_and_the_exchange_s_parts(monkeypatch):
    module = load_script(monkeypatch)
    windows = [(10.000, 10.010, 64), (10.020, 10.030, 128)]  # the judge's: opened, closed, calls
    stamps = [("answered", 10.0002, 0.0), ("queued", 10.0003, 0.0), ("ended", 10.0090, 8.0), ("ran", 10.0091, 0.0),
              ("answered", 10.0095, 0.0),  # the judge's answer: no seeds yet
              ("answered", 10.0201, 0.0), ("queued", 10.0202, 0.0), ("ended", 10.0290, 8.5), ("ran", 10.0291, 0.0),
              ("queued", 10.0500, 0.0), ("ended", 10.0600, 9.0), ("ran", 10.0610, 0.0)]  # in no window of the judge's
    rows = module.round_parts(windows, stamps)
    assert [row["calls"] for row in rows] == [64, 128]
    first = rows[0]
    assert first["window"] == pytest.approx(10.0) and first["device"] == 8.0
    assert [first[part] for part in module.PARTS] == pytest.approx([0.2, 0.1, 0.7, 0.1, 0.9])
    for row in rows:
        assert row["device"] + sum(row[part] for part in module.PARTS) == pytest.approx(row["window"])
    module.report(rows)


def test_what_it_stamps_is_still_there_to_stamp(monkeypatch):
    load_script(monkeypatch)
    from flashinfer_bench.bench.judge.schedule import TimedSchedule
    from flashinfer_bench.bench.replay import ReplayedCalls
    from flashinfer_bench.bench.worker.main import WireExchange

    for owner, name in ((WireExchange, "_answer"), (WireExchange, "ran"), (ReplayedCalls, "run"),
                        (ReplayedCalls, "wait"), (ReplayedCalls, "replay_ms"), (TimedSchedule, "on_ran")):
        assert callable(getattr(owner, name, None)), name
