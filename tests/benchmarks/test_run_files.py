"""benchmarks/phase_split.py and benchmarks/replayed_rounds.py: what they print from a run's phases and windows files,
written here as the judge writes them."""

import json

from helpers import run_benchmark

PHASES = ("build_s", "draws_s", "checks_s", "reference_s", "timed_s")


def run_script(name: str, *args: str) -> str:
    return run_benchmark(name.removesuffix(".py"), *args).stdout


def test_phase_split_sums_and_takes_medians_with_the_named_definitions_apart(tmp_path):
    def record(definition: str, total: float, timed: float) -> dict:
        return {"definition": definition, "solution": "s", "workload": "w", "status": "PASSED",
                "phases": {"device": "cpu", "started_at": 0.0, "total_s": total,
                           **{name: (timed if name == "timed_s" else 0.0) for name in PHASES}}}

    path = tmp_path / "phases.jsonl"
    lines = [record("slow", 10.0, 8.0), record("slow", 30.0, 20.0), record("a", 1.0, 0.5),
             record("b", 2.0, 1.0), record("b", 4.0, 3.0), {"definition": "c", "phases": None}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = run_script("phase_split.py", str(path), "--apart", "slow").splitlines()
    assert out[0].startswith("slow: 2 evaluations; total 40.0 s (median 20.000)")
    assert "timed 28.0 s (median 14.000)" in out[0]
    assert out[1].startswith("the others: 3 evaluations; total 7.0 s (median 2.000)")
    assert "timed 4.5 s (median 1.000)" in out[1]
    assert run_script("phase_split.py", str(path)).startswith("all: 5 evaluations; total 47.0 s")


def test_phase_split_sets_each_solutions_first_evaluation_apart_from_its_later_ones(tmp_path):
    def record(solution: str, started_at: float, checks: float) -> dict:
        return {"definition": "d", "solution": solution, "workload": "w", "status": "PASSED",
                "phases": {"device": "cuda:0", "started_at": started_at, "total_s": checks,
                           **{name: (checks if name == "checks_s" else 0.0) for name in PHASES}}}

    path = tmp_path / "phases.jsonl"
    lines = [record("a", 3.0, 0.1), record("a", 1.0, 0.4), record("b", 5.0, 0.3), record("b", 7.0, 0.1),
             record("b", 9.0, 0.2)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = run_script("phase_split.py", str(path), "--first").splitlines()
    assert out[1].startswith("  first of each solution: 2 evaluations; total 0.7 s")
    assert "checks 0.7 s (median 0.350)" in out[1]
    assert out[2].startswith("  later ones: 3 evaluations; total 0.4 s") and "checks 0.4 s (median 0.100)" in out[2]


def test_phase_split_sums_the_time_between_evaluations_per_device(tmp_path):
    def record(solution: str, device: str, started_at: float, total: float) -> dict:
        return {"definition": "d", "solution": solution, "workload": "w", "status": "PASSED",
                "phases": {"device": device, "started_at": started_at, "total_s": total,
                           **{name: 0.0 for name in PHASES}}}

    path = tmp_path / "phases.jsonl"
    lines = [record("b", "cuda:0", 12.0, 1.0), record("a", "cuda:0", 10.0, 1.5), record("c", "cuda:0", 13.5, 1.0),
             record("x", "cuda:1", 0.0, 5.0), record("y", "cuda:1", 5.25, 1.0)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = run_script("phase_split.py", str(path)).splitlines()
    # cuda:0 in start order a (10-11.5), b (12-13), c (13.5-): gaps 0.5 and 0.5; cuda:1: 0.25.
    assert out[1] == ("between evaluations on cuda:0: 1.0 s in all; the largest 0.50 s (b to c), "
                      "0.50 s (a to b)")
    assert out[2] == "between evaluations on cuda:1: 0.2 s in all; the largest 0.25 s (x to y)"


def test_replayed_rounds_groups_sessions_by_round_size_leaving_out_the_first_round_and_captures(tmp_path):
    def session(purpose: str, first_calls: int, calls: int, walls: list[float]) -> dict:
        rounds = [[0, 10, 5.0, 0.0, False], [10, first_calls, 9.0, 0.0, True]]  # warm-up, first replayed round
        rounds += [[100 + k, calls, wall, 0.0, True] for k, wall in enumerate(walls)]
        return {"purpose": purpose, "held_scale": 0.0, "rounds": rounds, "shipments": []}

    path = tmp_path / "windows.jsonl"
    sessions = [session("timed", 16, 64, [2.0, 2.5, 9.0]),  # 9.0 ms: a graph captured in the round
                session("timed", 16, 64, [1.0, 1.1]), session("timed", 16, 256, [4.0, 4.2, 4.1]),
                session("calibration", 16, 256, [0.1, 0.2])]
    path.write_text("".join(json.dumps(s) + "\n" for s in sessions))
    rows = [line.split() for line in run_script("replayed_rounds.py", str(path)).splitlines()[1:]]
    # 64 calls: two sessions, least windows 2.0 and 1.0 (median 1.5), spreads 0.5 and 0.1 (median 0.3, most 0.5).
    assert rows[0] == ["64", "2", "1.50", "ms", "0.30,", "0.50", "ms"]
    assert rows[1] == ["256", "1", "4.00", "ms", "0.20,", "0.20", "ms"]
    assert len(rows) == 2  # the calibration's rounds are not a solution's


def test_replayed_rounds_shipments_are_the_replayed_rounds_by_calls_shipped(tmp_path):
    """``--shipments``: the median window per bin of four calls shipped, per file, leaving out the warm-up's
    shipments (before the first replayed round) and other sessions than timed ones."""
    rounds = [[0, 10, 5.0, 0.0, False], [10, 64, 1.0, 0.0, True], [74, 1024, 4.0, 0.0, True]]
    timed = {"purpose": "timed", "held_scale": 0.0, "rounds": rounds,
             "shipments": [[3, 2, 9.0, 0.0], [20, 5, 0.5, 0.0], [80, 6, 0.7, 0.0], [90, 17, 1.2, 0.0]]}
    calibration = {**timed, "purpose": "calibration", "shipments": [[20, 5, 3.0, 0.0]]}
    path = tmp_path / "windows.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in (timed, calibration)))
    assert run_script("replayed_rounds.py", str(path), "--shipments").strip() == (
        "windows.jsonl: 4-7 calls 0.60 ms (2), 16-19 calls 1.20 ms (1)")


def test_replayed_rounds_totals_split_the_replayed_sessions_warm_up_from_their_rounds_and_shipments(tmp_path):
    """``--totals``: of the timed sessions whose calls were replayed, the warm-up rounds' windows (median and sum),
    the later rounds' and the shipments' sums; then every timed session's shipments (one made call by call too)."""
    replayed = {"purpose": "timed", "held_scale": 0.0,
                "rounds": [[0, 1, 150.0, 0.0, False], [1, 16, 2.0, 0.0, True], [17, 512, 11.0, 0.0, True]],
                "shipments": [[5, 2, 1.5, 0.0]]}
    other = {**replayed, "rounds": [[0, 1, 50.0, 0.0, False], [1, 16, 3.0, 0.0, True], [17, 64, 4.0, 0.0, True]],
             "shipments": [[20, 1, 0.5, 0.0]]}
    made_each = {"purpose": "timed", "held_scale": 0.0, "rounds": [[0, 1, 20.0, 0.0, False], [1, 1, 2.0, 0.0, False]],
                 "shipments": [[1, 1, 0.75, 0.0]]}
    calibration = {**replayed, "purpose": "calibration"}
    path = tmp_path / "windows.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in (replayed, other, made_each, calibration)))
    assert run_script("replayed_rounds.py", str(path), "--totals").strip() == (
        "windows.jsonl: 2 of 3 timed sessions replayed: warm-up rounds median 100.0 ms, 200 ms in all; their later "
        "rounds 20 ms, their shipments 2 ms; every timed session's shipments 3 ms")
