"""benchmarks/worker_phases.py: every phase it clocks is still there to clock (its run needs the GPU machine)."""

from helpers import load_benchmark


def test_every_clocked_phase_names_an_attribute_of_the_worker_s_code(monkeypatch):
    phases = load_benchmark("worker_phases", monkeypatch).clocked_phases()
    assert phases and all(callable(getattr(owner, name, None)) for owner, name, _ in phases)
    labels = [label or name for _, name, label in phases]
    assert len(labels) == len(set(labels))  # one phase per label
