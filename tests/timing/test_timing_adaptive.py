import pytest

from flashinfer_bench.timing import adaptive
from flashinfer_bench.timing.adaptive import sample_until


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def make_measurer(clock, values_per_batch, seconds_per_batch=1.0):
    """Each call returns the next batch of values and advances the fake clock."""
    batches = iter(values_per_batch)
    calls = []

    def measure(k):
        calls.append(k)
        clock.now += seconds_per_batch
        batch = next(batches)
        assert len(batch) == k
        return batch

    return measure, calls


def test_one_batch_without_target_or_budget():
    clock = FakeClock()
    measure, calls = make_measurer(clock, [[1.0, 2.0, 3.0]])
    out = sample_until(measure, 3, None, None, clock)
    assert out.samples == [1.0, 2.0, 3.0]
    assert calls == [3]
    assert out.target_met is False


def test_stops_when_target_met():
    clock = FakeClock()
    # first batch: very spread (CI = [min, max] for n=5 -> 400% of the median 1.0)
    noisy = [0.2, 0.5, 1.0, 2.0, 4.2]
    tight = [1.0] * 5
    measure, calls = make_measurer(clock, [noisy, tight, tight, tight, tight])
    out = sample_until(measure, 5, 50.0, 100.0, clock)
    assert out.target_met is True
    assert out.ci_width_pct < 50.0
    # n=10 still spans ranks 2..9 -> includes 0.5 .. 2.0 -> 150%; n=15 ranks 4..12 -> all 1.0
    assert calls == [5, 5, 5]
    assert len(out.samples) == 15


def test_stops_when_budget_spent():
    clock = FakeClock()
    noisy = [0.2, 0.5, 1.0, 2.0, 4.2]
    measure, calls = make_measurer(clock, [noisy] * 10, seconds_per_batch=1.0)
    out = sample_until(measure, 5, 0.001, 3.0, clock)
    assert out.target_met is False
    assert calls == [5, 5, 5]  # after 3 fake seconds the budget is spent
    assert len(out.samples) == 15


def test_budget_alone_keeps_sampling_until_spent():
    clock = FakeClock()
    measure, calls = make_measurer(clock, [[1.0, 1.0]] * 10, seconds_per_batch=0.5)
    out = sample_until(measure, 2, None, 2.0, clock)
    assert len(calls) == 4
    assert out.target_met is False


def test_target_alone_uses_default_budget(monkeypatch):
    monkeypatch.setattr(adaptive, "DEFAULT_BUDGET_S", 2.0)
    clock = FakeClock()
    measure, calls = make_measurer(clock, [[0.2, 0.5, 1.0, 2.0, 4.2]] * 10)
    out = sample_until(measure, 5, 1.0, None, clock)
    assert len(calls) == 2
    assert not out.target_met


def test_rejects_bad_arguments():
    with pytest.raises(ValueError):
        sample_until(lambda k: [1.0] * k, 0, None, None)
    with pytest.raises(ValueError):
        sample_until(lambda k: [1.0] * k, 3, 0.0, None)
