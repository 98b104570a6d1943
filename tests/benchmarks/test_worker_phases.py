"""benchmarks/worker_phases.py: every phase it clocks is still there to clock (its run needs the GPU machine)."""

import importlib.util

from helpers import REPO

SCRIPT = REPO / "benchmarks" / "worker_phases.py"


def test_every_clocked_phase_names_an_attribute_of_the_worker_s_code(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))  # it imports timed_call_costs beside it
    spec = importlib.util.spec_from_file_location("worker_phases", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    phases = module.clocked_phases()
    assert phases and all(callable(getattr(owner, name, None)) for owner, name, _ in phases)
    labels = [label or name for _, name, label in phases]
    assert len(labels) == len(set(labels))  # one phase per label
