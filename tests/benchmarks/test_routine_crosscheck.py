"""The routine cross-check's bookkeeping: tagging the test list, matching the two CSVs, the table (the runs
themselves need a GPU and FlashInfer)."""

import csv

import pytest
from helpers import load_benchmark


@pytest.fixture
def crosscheck(monkeypatch):
    return load_benchmark("routine_crosscheck", monkeypatch)


def write_csv(path, rows):
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["routine", "median_time", "std_time", "backend", "case_tag"])
        writer.writeheader()
        writer.writerows(rows)


def test_cases_are_tagged_by_line_and_matched_on_tag_and_backend(crosscheck, tmp_path):
    testlist = tmp_path / "list.txt"
    testlist.write_text("# a comment\n--routine bmm_fp8 --m 1\n\n--routine mm_fp4 --m 2  # trailing\n")
    tagged = crosscheck.tagged_testlist(testlist, tmp_path).read_text().splitlines()
    assert tagged == ["# a comment", "--routine bmm_fp8 --m 1 --case_tag L2", "", "--routine mm_fp4 --m 2 --case_tag L4"]
    write_csv(tmp_path / "theirs.csv", [
        {"routine": "mm_fp4", "median_time": "0.100", "std_time": "0.001", "backend": "cudnn", "case_tag": "L4"},
        {"routine": "bmm_fp8", "median_time": "0.500", "std_time": "0.002", "backend": "cublas", "case_tag": "L2"},
        {"routine": "bmm_fp8", "median_time": "0.400", "std_time": "0.002", "backend": "cudnn", "case_tag": "L2"}])
    write_csv(tmp_path / "ours.csv", [
        {"routine": "bmm_fp8", "median_time": "0.510", "std_time": "0.003", "backend": "cublas", "case_tag": "L2"},
        {"routine": "mm_fp4", "median_time": "0.120", "std_time": "0.004", "backend": "cudnn", "case_tag": "L4"},
        {"routine": "mm_fp4", "median_time": "0.120", "std_time": "0.004", "backend": "torch", "case_tag": "L4"}])
    found = crosscheck.matches(crosscheck.read_rows(tmp_path / "theirs.csv"), crosscheck.read_rows(tmp_path / "ours.csv"))
    assert [(m.case, m.backend) for m in found] == [("L2", "cublas"), ("L4", "cudnn")]  # only what both timed
    assert found[0].diff_pct == pytest.approx(2.0) and found[1].diff_pct == pytest.approx(20.0)
    lines = crosscheck.table(found, 3.0).splitlines()
    assert lines[1].endswith("yes") and lines[2].endswith("NO")
    assert crosscheck.read_rows(tmp_path / "missing.csv") == {}
