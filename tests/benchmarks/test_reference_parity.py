"""benchmarks/reference_parity.py: a real small run on the CPU, the reference's own code as its one solution."""

import json

from helpers import run_benchmark


def test_the_references_code_as_a_solution_is_run_and_its_speed_up_printed_per_workload(tmp_path):
    out = tmp_path / "parity.json"
    done = run_benchmark("reference_parity", "--workloads", "2", "--json", str(out), cwd=tmp_path)
    rows = json.loads(out.read_text())
    assert [row["n"] for row in rows] == [4096, 16384] and {row["status"] for row in rows} == {"PASSED"}
    for row in rows:
        # Both sides timed here (the CPU's host clock), so the speed-up is theirs, whatever its value on a busy host.
        assert row["latency_ms"] > 0 and row["reference_latency_ms"] > 0
        assert row["speedup"] == row["reference_latency_ms"] / row["latency_ms"]
        assert f"{row['n']:>9}   PASSED" in done.stdout
