"""A latency that the judge's clock set (its timing claim not believed) is marked wherever results are read in
the terminal: `report summary`'s table and `report compare`'s latencies and bands."""

from report_fixtures import write_results_set

from flashinfer_bench.cli.main import main


def rows_with(out: str, name: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("\u2502") and f" {name} " in line]


def test_summary_marks_the_solution_and_says_how_many(tmp_path, capsys):
    root = write_results_set(tmp_path / "set", judge_bounded={"dec_triton"})
    assert main(["summary", "--local", str(root)]) == 0
    out = capsys.readouterr().out
    (marked,) = rows_with(out, "dec_triton")
    assert "\u2020" in marked
    assert all("\u2020" not in row for row in rows_with(out, "dec_ref") + rows_with(out, "rms_triton"))
    assert "\u2020 a latency the judge's clock set in at least one trial" in out
    assert "(4 evaluation(s) here)" in out  # dec_triton's four workloads
    clean = write_results_set(tmp_path / "clean")
    assert main(["summary", "--local", str(clean)]) == 0
    assert "\u2020" not in capsys.readouterr().out


def test_compare_marks_the_side_whose_latency_the_judge_set(tmp_path, capsys):
    base = write_results_set(tmp_path / "base")
    candidate = write_results_set(tmp_path / "candidate", judge_bounded={"dec_triton"})
    assert main(["report", "compare", str(base), str(candidate)]) == 0
    out = capsys.readouterr().out
    rows = rows_with(out, "dec_triton")
    assert len(rows) == 4
    for row in rows:
        cells = [cell.strip() for cell in row.split("\u2502")[1:-1]]
        base_ms, candidate_ms, band = cells[2], cells[3], cells[5]
        assert "\u2020" not in base_ms and candidate_ms.endswith("\u2020") and band == "any\u2020"
    assert "\u2020 4 timed evaluation(s) had a side whose latency the judge's clock set" in out


def test_best_marks_a_speed_up_from_judge_set_latencies(tmp_path, capsys):
    root = write_results_set(tmp_path / "set", judge_bounded={"dec_triton"})
    assert main(["best", "--local", str(root)]) == 0
    out = capsys.readouterr().out
    (row,) = rows_with(out, "dec_triton")
    assert row.rstrip(" \u2502").endswith("\u2020") and "\u2020 a latency the judge's clock set" in out
