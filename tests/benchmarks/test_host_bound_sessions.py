"""benchmarks/host_bound_sessions.py on a real run of the default device (the CPU here: calls one at a time)."""

import pytest
import torch
from helpers import run_benchmark


@pytest.mark.slow  # a real run: a judge and its workers
def test_each_sleeping_solution_gets_a_verdict_whose_latency_holds_its_sleep_where_it_is_not_replayed():
    done = run_benchmark("host_bound_sessions", "--sleeps-ms", "0,20")
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines()[1:]}
    assert set(rows) == {"sleeps_0ms", "sleeps_20ms"}, done.stdout
    assert all(row[2] == "PASSED" and float(row[1]) > 0 for row in rows.values()), done.stdout
    assert "claim not believed" not in done.stdout
    if not torch.cuda.is_available():  # the host clock times the whole call, the sleep in it
        assert float(rows["sleeps_20ms"][3]) >= 20e3 > float(rows["sleeps_0ms"][3]), done.stdout
