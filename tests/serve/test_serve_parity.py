"""A batch submitted to `serve` gets the statuses `run` gives the same items (same flags, same runner)."""

import json
import shutil
import subprocess
import sys

import pytest
from helpers import FIXTURES, REPO, child_env
from serve.server_process import FAST, ServerProcess

from flashinfer_bench.client import Client
from flashinfer_bench.data import TraceSet

EXAMPLE = REPO / "examples" / "trace-set"
SUBSET = ("rmsnorm_h4096", "gemm_n256_k256")


def example_subset(root):
    """The example trace set's definitions in SUBSET, with their solutions, workloads and blobs."""
    shutil.copytree(EXAMPLE, root, ignore=lambda folder, names: [
        n for n in names if n.endswith((".json", ".jsonl")) and n.rsplit(".", 1)[0] not in SUBSET
        and not n.rsplit(".", 1)[0].startswith(SUBSET)])
    return root


def run_statuses(root, *args: str) -> dict[tuple[str, str], str]:
    ran = subprocess.run([sys.executable, "-m", "flashinfer_bench.cli.main", "run", "--local", str(root), *FAST,
                          *args], capture_output=True, text=True, env=child_env(), timeout=900)
    assert ran.returncode == 0, ran.stderr
    traces = [t for group in TraceSet.from_path(root).traces.values() for t in group]
    return {(t.solution, t.workload.uuid): t.evaluation.status.value for t in traces}


def serve_statuses(root, workdir, *args: str) -> dict[tuple[str, str], str]:
    solutions = [s for group in TraceSet.from_path(root, load_traces=False).solutions.values() for s in group]
    server = ServerProcess(root, workdir, args=args).start()
    try:
        with Client(server.url, server.tokens[0]) as client:
            submitted = client.submit_batch([{"solution": s} for s in solutions])
            tasks = client.wait([s.task_id for s in submitted], timeout=900)
    finally:
        server.stop()
    names = {s.normalized_solution_name: solution.name for s, solution in zip(submitted, solutions, strict=True)}
    assert all(task["status"] == "completed" for task in tasks), [
        {k: v for k, v in task.items() if k != "traces"} for task in tasks if task["status"] != "completed"]
    return {(names[t["solution"]], t["workload"]["uuid"]): t["evaluation"]["status"]
            for task in tasks for t in task["traces"]}


@pytest.mark.slow
def test_the_example_solutions_get_runs_statuses(tmp_path):
    root = example_subset(tmp_path / "set")
    definitions = TraceSet.from_path(root, load_traces=False).definitions
    assert set(definitions) == set(SUBSET)
    expected = run_statuses(root)
    assert len(expected) == 12
    assert serve_statuses(root, tmp_path) == expected


@pytest.mark.slow
def test_the_adversarial_solutions_get_runs_statuses(tmp_path):
    root = shutil.copytree(FIXTURES / "trace_sets" / "adversarial", tmp_path / "set")
    expected = run_statuses(root, "--timeout", "8")
    assert set(expected.values()) == set(json.loads((root / "EXPECTED.json").read_text()).values())
    assert serve_statuses(root, tmp_path, "--timeout", "8") == expected
