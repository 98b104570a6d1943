"""The judge's windows of a session, logged where $FLASHINFER_BENCH_WINDOWS_FILE names a file (judge/windows.py)."""

import json

from flashinfer_bench.bench.judge.windows import WINDOWS_FILE_ENV, Round, Shipment, log_windows


def test_each_session_is_one_line_of_its_windows_and_nothing_is_written_without_the_variable(tmp_path, monkeypatch):
    path = tmp_path / "windows.jsonl"
    monkeypatch.delenv(WINDOWS_FILE_ENV, raising=False)
    log_windows("timed", [Round(0, 5, 1.5, 0.25)], [], 1.0)
    assert not path.exists()
    monkeypatch.setenv(WINDOWS_FILE_ENV, str(path))
    log_windows("calibration", [Round(0, 5, 1.5, 0.25), Round(5, 5, 2.0, 0.0, True)], [Shipment(7, 1, 0.5, 0.1)], 0.5)
    log_windows("timed", [], [], 0.0)
    first, second = (json.loads(line) for line in path.read_text().splitlines())
    assert first == {"purpose": "calibration", "held_scale": 0.5, "rounds": [[0, 5, 1.5, 0.25, False],
                                                                              [5, 5, 2.0, 0.0, True]],
                     "shipments": [[7, 1, 0.5, 0.1]]}
    assert second["purpose"] == "timed" and second["rounds"] == []
