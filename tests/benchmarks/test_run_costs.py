"""benchmarks/run_costs.py: its figures from a real small run on the CPU (the judges' phases of each evaluation,
read back from the run), and its arithmetic over given phases."""

import json

import pytest
import torch
from helpers import load_benchmark, run_benchmark, scale_add_set

OK = "def run(x, y):\n    return x * 2 + y\n"
PHASES = ("build_s", "draws_s", "checks_s", "reference_s", "timed_s")


def record(device: str, started_at: float, total_s: float, **phases: float) -> dict:
    return {"definition": "d", "solution": "s", "workload": "w", "status": "PASSED",
            "phases": {"device": device, "started_at": started_at, "total_s": total_s,
                       **{name: phases.get(name, 0.0) for name in PHASES}}}


def test_the_devices_time_is_split_into_setup_phases_and_the_rest(monkeypatch):
    costs = load_benchmark("run_costs", monkeypatch).run_costs([
        record("cuda:0", 110.0, 10.0, build_s=4.0, timed_s=5.0),
        record("cuda:0", 121.0, 8.0, draws_s=1.0, checks_s=2.0, reference_s=3.0),
        record("cuda:1", 105.0, 30.0, timed_s=20.0),
        {"definition": "d", "solution": "t", "workload": "w", "status": "TIMEOUT", "phases": None},
    ], started=100.0, ended=140.0)
    assert costs["evaluations"] == 4 and costs["devices"] == ["cuda:0", "cuda:1"]
    assert costs["device_time_s"] == 80.0
    assert costs["seconds"] == {"setup_s": 15.0, "build_s": 4.0, "draws_s": 1.0, "checks_s": 2.0,
                                "reference_s": 3.0, "timed_s": 25.0, "other_s": 30.0}
    assert costs["evaluations_per_hour"] == pytest.approx(4 / 40 * 3600)
    assert costs["evaluations_per_hour_after_setup"] == pytest.approx(4 / 32.5 * 3600)
    assert costs["statuses"] == {"PASSED": 3, "TIMEOUT": 1}
    assert costs["timed_split"] == {"first_rounds_s": 0.0, "rounds_s": 0.0, "shipments_s": 0.0,
                                    "judge_s": 25.0}  # no windows given


def test_the_timed_sessions_are_split_by_their_windows_the_calibration_s_left_out(monkeypatch):
    """Rounds: (first, calls, wall_ms, held_ms, replayed); shipments: (first, calls, wall_ms, held_ms)."""
    sessions = [
        {"purpose": "calibration", "rounds": [[0, 5, 900.0, 0.0, False]], "shipments": [[0, 1, 900.0, 0.0]]},
        {"purpose": "timed", "rounds": [[0, 10, 1500.0, 0.0, False], [10, 64, 500.0, 0.0, True]],
         "shipments": [[3, 2, 250.0, 0.0], [20, 1, 250.0, 0.0]]},
        {"purpose": "timed", "rounds": [[0, 3, 1000.0, 10.0, False]], "shipments": []},
    ]
    costs = load_benchmark("run_costs", monkeypatch).run_costs(
        [record("cuda:0", 101.0, 9.0, checks_s=2.0, timed_s=5.0)], started=100.0, ended=110.0, sessions=sessions)
    assert costs["timed_split"] == pytest.approx({"first_rounds_s": 2.5, "rounds_s": 0.5, "shipments_s": 0.5,
                                                  "judge_s": 1.5})
    assert costs["seconds"]["timed_s"] == 5.0  # the split is of it, not beside it


@pytest.mark.slow  # a real run: the CLI, a judge and its workers
def test_a_small_run_reports_where_its_time_went(tmp_path):
    root = scale_add_set(tmp_path / "set", {"a_ok": OK, "b_ok": OK}, sizes=(64,))
    out = tmp_path / "costs.json"
    done = run_benchmark("run_costs", "--local", str(root), "--json", str(out), "--", "--iterations", "3",
                         "--warmup-runs", "1", "--num-trials", "2", cwd=tmp_path)
    costs = json.loads(out.read_text())
    device = "cuda:0" if torch.cuda.is_available() else "cpu"  # the run's default: the first GPU, else the CPU
    assert costs["evaluations"] == 2 and costs["statuses"] == {"PASSED": 2} and costs["devices"] == [device]
    assert not (root / "traces").exists()  # the run saved nothing: --no-save-results unless asked
    records = [verdict["phases"] for verdict in costs["verdicts"]]
    for phases in records:
        assert phases["build_s"] > 0 and phases["checks_s"] > 0 and phases["timed_s"] > 0
        assert sum(phases[name] for name in PHASES) <= phases["total_s"]  # nested phases counted once
    assert sum(phases["reference_s"] for phases in records) > 0  # the workload's reference, timed once
    # The judge draws the workload's inputs at least once; a later solution whose replayed rounds came out as the
    # earlier's has its picked calls' expected outputs already, and may draw none (seen on an H100).
    assert sum(phases["draws_s"] for phases in records) > 0
    seconds = costs["seconds"]
    assert seconds["setup_s"] > 0 and seconds["other_s"] >= 0
    assert costs["evaluations_per_hour"] == pytest.approx(2 / costs["wall_s"] * 3600)
    assert "where the time went" in done.stdout and "timed sessions" in done.stdout
    split = costs["timed_split"]  # every session ships its planned last call's outputs at least
    assert split["first_rounds_s"] > 0 and split["rounds_s"] > 0 and split["shipments_s"] > 0
    assert split["judge_s"] > 0 and "their later rounds" in done.stdout and "the judge between" in done.stdout
    if not torch.cuda.is_available():
        assert "device busy: no GPU" in done.stdout and costs["device_busy"] == {}
