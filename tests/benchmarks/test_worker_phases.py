"""benchmarks/worker_phases.py: every phase it clocks is still there to clock, and a run on this machine judges a
definition's reference as the solution (its figures need the GPU machine)."""

import json
import re

import pytest
import torch
from helpers import load_benchmark, run_benchmark


def test_every_clocked_phase_names_an_attribute_of_the_worker_s_code(monkeypatch):
    phases = load_benchmark("worker_phases", monkeypatch).clocked_phases()
    assert phases and all(callable(getattr(owner, name, None)) for owner, name, _ in phases)
    labels = [label or name for _, name, label in phases]
    assert len(labels) == len(set(labels))  # one phase per label


@pytest.mark.slow  # a real worker process and a judge's evaluations
def test_a_definition_s_reference_is_judged_as_the_solution_at_the_settings_given(tmp_path):
    definition = {"name": "halve", "op_type": "elementwise", "axes": {"n": {"type": "var"}},
                  "inputs": {"x": {"shape": ["n"], "dtype": "float32"}},
                  "outputs": {"y": {"shape": ["n"], "dtype": "float32"}},
                  "reference": "import torch\ndef run(x):\n    return x / 2\n"}
    (tmp_path / "halve.json").write_text(json.dumps(definition))
    lines = [{"definition": "halve", "solution": None, "evaluation": None,
              "workload": {"uuid": f"w{n}", "axes": {"n": n}, "inputs": {}}} for n in (64, 1024)]
    (tmp_path / "halve.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = run_benchmark("worker_phases", "--definition", str(tmp_path / "halve.json"), "--workloads",
                        str(tmp_path / "halve.jsonl"), "--workload-index", "1", "--warmup-runs", "1",
                        "--iterations", "3", "--num-trials", "1", "--evaluations", "1").stdout
    # The calibration's session and one per evaluation (the first calls', then the measured one's), each of a
    # warm-up call and 3 timed calls; on a GPU the timed calls are replayed in rounds, more of them than planned
    # (bench/replay.py), and the calibration may time more than one session.
    counted = re.search(r"worker: (\d+) timing sessions, (\d+) timed calls", out)
    assert counted is not None, out
    sessions, calls = int(counted[1]), int(counted[2])
    if torch.cuda.is_available():
        assert sessions >= 3 and calls > 12, out
    else:
        assert (sessions, calls) == (3, 12), out
    assert "remote, worker not sandboxed:" in out, out
