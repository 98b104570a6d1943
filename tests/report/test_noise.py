"""performance.extra: how a latency's noise is read from a trace (report/noise.py), and how the field is written
so that upstream's lines stay theirs (data/trace.py)."""

import json

import pytest
from helpers import write_trace_set
from pydantic import BaseModel
from report_fixtures import DEFINITIONS, make_trace, result_line

from flashinfer_bench.data import Performance, TraceSet
from flashinfer_bench.report.noise import Spread, read_spread

EXTRA = {"timing_method": "cupti", "samples": 150, "latency_std_ms": 0.02, "latency_ci95_ms": [0.98, 1.03],
         "trial_latencies_ms": [0.99, 1.0, 1.05], "reference_ci95_ms": [1.9, 2.1],
         "settings": {"iterations": 50, "num_trials": 3}}


def test_a_recorded_spread_is_read():
    spread = read_spread(Performance(latency_ms=1.0, extra=EXTRA))
    assert spread == Spread("cupti", (0.98, 1.03), 0.02, 150, (0.99, 1.0, 1.05), (1.9, 2.1),
                            {"iterations": 50, "num_trials": 3})
    # the interval reaches 3% above; the trials spread 0.06 ms, half of it 3% too; the larger counts
    assert spread.relative_noise(1.0) == pytest.approx(0.03)
    assert Spread(trial_latencies_ms=(1.0, 1.2)).relative_noise(1.0) == pytest.approx(0.1)
    assert Spread(latency_ci95_ms=(0.5, 1.01)).relative_noise(1.0) == pytest.approx(0.5)


@pytest.mark.parametrize("extra", [None, {}, {"latency_ci95_ms": "narrow"}, {"latency_ci95_ms": [1.1, 0.9]},
                                   {"latency_ci95_ms": [0.9]}, {"latency_ci95_ms": [0.0, 1.0]},
                                   {"latency_ci95_ms": [True, 2]}, {"trial_latencies_ms": [1.0, -1.0]},
                                   {"trial_latencies_ms": [1.0]}, {"latency_ci95_ms": [float("nan"), 1.0]}])
def test_missing_or_malformed_values_are_absent(extra):
    spread = read_spread(Performance(latency_ms=1.0, extra=extra))
    assert spread.latency_ci95_ms is None and spread.relative_noise(1.0) is None


def test_other_malformed_values_are_dropped_one_by_one():
    spread = read_spread(Performance(extra={"timing_method": 3, "samples": 2.5, "settings": [1],
                                            "latency_std_ms": -1, "reference_ci95_ms": [1.0, 2.0],
                                            "judge_estimated_trials": True}))
    assert spread == Spread(reference_ci95_ms=(1.0, 2.0))
    assert read_spread(Performance(extra={"judge_estimated_trials": -2})).judge_estimated_trials == 0
    assert read_spread(Performance(extra={"judge_estimated_trials": 2})).judge_estimated_trials == 2
    assert read_spread(None) == Spread()


def test_extra_is_written_only_when_set_and_upstreams_reader_ignores_it(tmp_path):
    plain = Performance(latency_ms=1.0, reference_latency_ms=2.0, speedup_factor=2.0)
    assert plain.model_dump_json() == '{"latency_ms":1.0,"reference_latency_ms":2.0,"speedup_factor":2.0}'
    line = make_trace("d", "s", "w", extra=EXTRA).to_json_line()
    performance = json.loads(line)["evaluation"]["performance"]
    assert list(performance) == ["latency_ms", "reference_latency_ms", "speedup_factor", "extra"]
    assert performance["extra"] == EXTRA

    class UpstreamPerformance(BaseModel):  # upstream's model: pydantic's defaults, unknown fields dropped
        latency_ms: float
        reference_latency_ms: float
        speedup_factor: float

    assert UpstreamPerformance.model_validate(performance).model_dump() == json.loads(plain.model_dump_json())


def test_lines_without_extra_still_share_one_field_name_set(tmp_path):
    """The loader holds pydantic's field-name set once for models given every field; upstream's lines never give
    `extra`, and must still be held that way (benchmarks/trace_loading.py measures the memory)."""
    root = write_trace_set(tmp_path, DEFINITIONS[:1], [], {})
    lines = [result_line("rmsnorm_h128", "s", {"batch_size": b}, "PASSED", 1.0, 2.0, spread=None) for b in (1, 2)]
    assert all('"speedup_factor":2.0}}}' in line for line in lines)  # performance without extra, as upstream's
    (root / "traces").mkdir()
    (root / "traces" / "t.jsonl").write_text("".join(lines))
    first, second = TraceSet.from_path(root).traces["rmsnorm_h128"]
    a, b = first.evaluation.performance, second.evaluation.performance
    assert a.extra is None and a.__pydantic_fields_set__ is b.__pydantic_fields_set__
    assert first.to_json_line() == lines[0]
