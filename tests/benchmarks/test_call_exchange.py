"""benchmarks/call_exchange.py: its split of a correctness call on stamps made up here, and a real run on this
machine's first device (the CPU here)."""

import pytest
from helpers import load_benchmark, run_benchmark


def test_a_call_is_its_parts_on_both_clocks(monkeypatch):
    module = load_benchmark("call_exchange", monkeypatch)
    judge = [("begun", 1.0000), ("sent", 1.0001), ("answered", 1.0030), ("ended", 1.0032),
             ("begun", 2.0000), ("sent", 2.0002)]  # a call the worker never answered: left out
    worker = [("received", 1.0003), ("harness begun", 1.0004), ("harness ended", 1.0024), ("answering", 1.0025)]
    [row] = module.call_parts(judge, worker, 4096)
    assert row["n"] == 4096 and row["call"] == pytest.approx(3.2)
    assert [row[part] for part in module.PARTS] == pytest.approx([0.1, 0.2, 0.1, 2.0, 0.1, 0.5, 0.2])
    assert sum(row[part] for part in module.PARTS) == pytest.approx(row["call"])
    module.report([row])


def test_what_it_stamps_is_still_there_to_stamp(monkeypatch):
    load_benchmark("call_exchange", monkeypatch)
    from flashinfer_bench.bench.evaluators import evaluator
    from flashinfer_bench.bench.harness import Harness
    from flashinfer_bench.bench.judge.remote import RemoteSolution
    from flashinfer_bench.bench.wire.judge_worker import JudgeChannel, WorkerChannel

    for owner, name in ((RemoteSolution, "call"), (WorkerChannel, "send"), (WorkerChannel, "receive"),
                        (JudgeChannel, "send"), (JudgeChannel, "receive"), (Harness, "call"),
                        (evaluator, "work_ahead")):
        assert callable(getattr(owner, name, None)), name


@pytest.mark.slow  # a real worker process and a judge's evaluations
def test_a_run_splits_every_correctness_call():
    out = run_benchmark("call_exchange", "--sizes", "4096", "--evaluations", "1").stdout
    # the first evaluation and the one asked for, three trials each (the defaults)
    assert "n=4096, 6 calls, medians (ms): call " in out
    for part in ("before sending", "to the worker", "before the harness", "the harness", "after the harness",
                 "to the judge", "reading"):
        assert f"  {part}" in out
