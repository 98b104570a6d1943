"""`report compare`, `report visualize` and `report summary` from the command line: output, exit statuses, bad
input in one line, progress only on a terminal."""

import io
import subprocess
import sys

from helpers import child_env
from report_fixtures import SOLUTIONS, write_results_set
from rich.console import Console

from flashinfer_bench.cli.main import main
from flashinfer_bench.cli.report import working

CLI = [sys.executable, "-m", "flashinfer_bench.cli.main"]


def cells(table_text):
    """First cell -> the stripped cells of each row of a rich table."""
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in table_text.splitlines()
            if line.startswith("│")]
    return {row[0]: row for row in rows}


def test_compare_prints_verdicts_and_fails_on_regression(tmp_path, capsys):
    base = write_results_set(tmp_path / "base")
    candidate = write_results_set(tmp_path / "candidate", change={"rms_triton": 1.2, "dec_triton": 0.8})
    assert main(["report", "compare", str(base), str(candidate)]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if "rms_triton" in line]
    assert len(rows) == 5 and all("1.20x" in row and "SLOWER" in row and "0.98-1.02x" in row for row in rows)
    assert sum("FASTER" in line for line in out.splitlines()) == 4
    geomeans = cells(out.split("geometric mean")[1])
    # decode: dec_ref 1.0 and dec_triton 0.8 on 4 workloads each; rmsnorm: 1.2 on 5 of 13 (rms_cuda failed one)
    assert geomeans["decode_h8"] == ["decode_h8", "0.89x", "8", "4", "4", "0", "0"]
    assert geomeans["rmsnorm_h128"] == ["rmsnorm_h128", "1.07x", "14", "0", "9", "5", "0"]
    assert "matched 27 evaluations" in out and "assumed" not in out

    assert main(["report", "compare", str(base), str(candidate), "--fail-on-regression", "25"]) == 0
    assert main(["report", "compare", str(base), str(candidate), "--fail-on-regression", "10"]) == 1
    assert "regression: 5 evaluation(s) got SLOWER by more than 10%" in capsys.readouterr().err


def test_a_status_that_broke_is_a_regression_and_changes_only_hides_the_rest(tmp_path, capsys):
    base = write_results_set(tmp_path / "base")
    candidate = write_results_set(tmp_path / "candidate", broken={("rms_ref", 4)})
    assert main(["report", "compare", str(base), str(candidate), "--changes-only",
                 "--fail-on-regression", "50"]) == 1
    out = capsys.readouterr().out
    assert "PASSED -> INCORRECT_NUMERICAL" in out and "SAME" not in out.split("geometric mean")[0]


def test_trace_files_without_a_spread_are_compared_with_the_assumed_noise(tmp_path, capsys):
    base = write_results_set(tmp_path / "base", spread=None)
    candidate = write_results_set(tmp_path / "candidate", spread=None, change={"rms_triton": 1.04, "rms_cuda": 1.2})
    file = "traces/alice/rmsnorm/rmsnorm_h128.jsonl"  # rms_triton's results alone
    assert main(["report", "compare", str(base / file), str(candidate / file)]) == 0
    out = capsys.readouterr().out
    assert "0.91-1.09x*" in out and "SLOWER" not in out  # 4% is within an assumed 5% on each side
    assert "matched 5 evaluations" in out and "assumed to be ±5%" in out
    assert main(["report", "compare", str(base), str(candidate), "--default-noise", "1"]) == 0
    out = capsys.readouterr().out
    assert sum("SLOWER" in line for line in out.splitlines() if "rms_" in line) == 5 + 4  # rms_cuda: 4 passed


def test_latencies_the_judge_set_are_marked_and_not_called(tmp_path, capsys):
    base = write_results_set(tmp_path / "base")
    candidate = write_results_set(tmp_path / "candidate", change={"rms_triton": 2.0}, judge_bounded={"rms_triton"})
    assert main(["report", "compare", str(base), str(candidate), "--fail-on-regression", "10"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if "rms_triton" in line]
    assert len(rows) == 5 and all("2.00x" in row and "any†" in row and "SAME" in row for row in rows)
    assert "† 5 timed evaluation(s) had a side whose latency the judge's clock set" in " ".join(out.split())


def test_bad_input_is_one_line_and_status_2(tmp_path):
    base = write_results_set(tmp_path / "base")
    not_traces = tmp_path / "notes.txt"
    not_traces.write_text("these are not traces\n")
    for argv, expected in (
        (["report", "compare", str(base), str(tmp_path / "missing")],
         "missing: expected a trace-set folder or a .jsonl trace file"),
        (["report", "compare", str(base), str(not_traces)], "notes.txt:1: expected a JSONL trace file"),
        (["report", "visualize", "--local", str(base), "-o", str(tmp_path)], "cannot be written"),
        (["report", "compare", str(base), str(base), "--min-change", "-1"], "expected a percentage of 0 or more"),
    ):
        done = subprocess.run([*CLI, *argv], capture_output=True, text=True, timeout=120, env=child_env())
        errors = [line for line in done.stderr.splitlines() if "error" in line]
        assert done.returncode == 2 and len(errors) == 1 and expected in errors[0], done.stderr


def test_a_bad_file_in_a_trace_set_is_reported_and_the_rest_is_compared(tmp_path, capsys):
    base = write_results_set(tmp_path / "base")
    candidate = write_results_set(tmp_path / "candidate")
    (candidate / "solutions" / "bob" / "rmsnorm" / "rmsnorm_h128" / "rms_cuda.json").write_text("{")
    assert main(["report", "compare", str(base), str(candidate), "--fail-on-regression", "1"]) == 2
    captured = capsys.readouterr()
    assert len([line for line in captured.err.splitlines() if line.startswith("error: ")]) == 1
    assert "matched 27 evaluations" in captured.out


def test_summary_has_the_numbers_per_solution_and_per_author(tmp_path, capsys):
    root = write_results_set(tmp_path / "set")
    assert main(["report", "summary", "--local", str(root)]) == 0
    out = capsys.readouterr().out
    for column in ("success", "mean speedup", "geomean speedup", "fast_1", "fast_2", "win rate", "per author"):
        assert column in out
    authors = cells(out.split("per author")[1])
    assert set(authors) == {author for _, author, _ in SOLUTIONS.values()}
    # alice: every evaluation passed and was the fastest; 2.0x on 5 rmsnorm and 2.5x on 4 decode workloads
    assert authors["alice"] == ["alice", "2", "9/9", "100%", "2.22x", "2.21x", "100%", "100%", "100%"]
    # bob: rms_cuda 1.25x on 4 of 5, dec_broken never built; never the fastest
    assert authors["bob"] == ["bob", "2", "4/9", "44%", "1.25x", "1.25x", "44%", "0%", "0%"]


def test_progress_only_on_a_terminal():
    quiet = io.StringIO()
    with working("loading things", Console(file=quiet, force_terminal=False)):
        pass
    assert quiet.getvalue() == ""
    shown = io.StringIO()
    with working("loading things", Console(file=shown, force_terminal=True)):
        pass
    assert "loading things" in shown.getvalue()


def test_visualize_says_what_it_wrote_and_nothing_else_off_a_terminal(tmp_path):
    root = write_results_set(tmp_path / "set")
    page = tmp_path / "sub" / "r.html"
    done = subprocess.run([*CLI, "report", "visualize", "--local", str(root), "-o", str(page)], capture_output=True,
                          text=True, timeout=120, env=child_env())
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.strip() == f"wrote {page}: 27 evaluations of 2 definitions"
    assert page.stat().st_size < 200_000
    validate = subprocess.run([*CLI, "validate", "--dataset", str(root)], capture_output=True, text=True,
                              timeout=120, env=child_env())
    assert validate.returncode == 0 and validate.stderr == ""
