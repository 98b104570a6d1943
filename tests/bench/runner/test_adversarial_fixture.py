"""The adversarial fixture under both runners, on whatever devices are present (the GPU when there is one).

Every solution must get the status EXPECTED.json names for it, in one run, whatever the others do.
"""

import json
import shutil

import pytest
from helpers import FIXTURES

from flashinfer_bench.bench import Benchmark, BenchmarkConfig
from flashinfer_bench.data import TraceSet

ROOT = FIXTURES / "trace_sets" / "adversarial"


@pytest.mark.slow
@pytest.mark.parametrize("isolated", [False, True], ids=["persistent", "isolated"])
def test_every_solution_gets_its_expected_status(tmp_path, isolated):
    expected = json.loads((ROOT / "EXPECTED.json").read_text())
    root = shutil.copytree(ROOT, tmp_path / "set")
    config = BenchmarkConfig.default(use_isolated_runner=isolated, timeout_seconds=8, iterations=5, warmup_runs=2,
                                     num_trials=2)
    result = Benchmark(TraceSet.from_path(root), config).run_all(save_results=True)
    traces = [t for group in result.traces.values() for t in group]
    got: dict[str, set[str]] = {}
    for trace in traces:
        got.setdefault(trace.solution, set()).add(trace.evaluation.status.value)
    assert got == {name: {status} for name, status in expected.items()}
    written = sum(1 for f in (root / "traces").rglob("*.jsonl") for line in f.read_text().splitlines() if line)
    assert written == len(traces)
