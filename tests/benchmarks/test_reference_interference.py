"""benchmarks/reference_interference.py: a real small run on the CPU, an honest and a hostile run of the reference's
own code (the busy thread is a CPU's here)."""

import json

from helpers import run_benchmark


def test_an_honest_and_a_hostile_run_are_made_and_their_speed_ups_printed_per_workload(tmp_path):
    out = tmp_path / "interference.json"
    done = run_benchmark("reference_interference", "--repeat", "1", "--json", str(out), cwd=tmp_path)
    rows = json.loads(out.read_text())
    assert [(row["run"], row["n"]) for row in rows] == [("honest", 4096), ("honest", 1 << 20),
                                                         ("hostile", 4096), ("hostile", 1 << 20)]
    assert {row["status"] for row in rows} == {"PASSED"}
    for row in rows:
        assert row["latency_ms"] > 0 and row["reference_latency_ms"] > 0
        assert row["speedup"] == row["reference_latency_ms"] / row["latency_ms"]
        assert f"{row['run']:>8} {row['n']:>9}   PASSED" in done.stdout
