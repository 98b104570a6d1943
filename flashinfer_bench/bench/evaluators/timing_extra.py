"""What a trace keeps beside a solution's latency (``performance.extra``; its keys: data/performance_extra.py)."""

from __future__ import annotations

from typing import Any

from flashinfer_bench.bench.config import ResolvedEvalConfig
from flashinfer_bench.bench.judge.windows import SessionLatency
from flashinfer_bench.bench.wire.parent_judge import ReferenceTiming
from flashinfer_bench.data import performance_extra as key
from flashinfer_bench.timing.stats import summarize


def timing_extra(sessions: list[SessionLatency], cfg: ResolvedEvalConfig, setup_ms: float | None,
                 reference: ReferenceTiming | None) -> dict[str, Any]:
    """What a trace keeps beside its latency (``performance.extra``, keys: data/performance_extra.py): how it was
    measured and how noisy it was, over the sessions whose claims were believed, and the settings."""
    believed = [s for s in sessions if s.samples_ms]
    samples = [sample for s in believed for sample in s.samples_ms]
    extra: dict[str, Any] = {
        key.TRIAL_LATENCIES_MS: [s.latency_ms for s in sessions],
        key.SETTINGS: cfg.model_dump(mode="json"),
    }
    if samples:
        stats = summarize(samples)
        extra |= {key.TIMING_METHOD: believed[0].conditions["timer"], key.SAMPLES: len(samples),
                  key.LATENCY_STD_MS: stats.std_ms, key.LATENCY_CI95_MS: [stats.ci95_low_ms, stats.ci95_high_ms]}
    if len(believed) < len(sessions):
        extra[key.JUDGE_ESTIMATED_TRIALS] = len(sessions) - len(believed)
    if setup_ms is not None:
        extra[key.SETUP_LATENCY_MS] = setup_ms
    if sessions:
        extra[key.TIMING_CONDITIONS] = dict(sessions[0].conditions)
        extra[key.JUDGE_CLOCK_MS] = [round(s.clocked_ms, 6) for s in sessions]
        extra[key.TIMED_CALLS] = [s.timed_calls for s in sessions]
        busiest = max(s.busy_fraction for s in sessions)
        if busiest > 0:
            extra[key.HOST_BUSY_FRACTION] = round(busiest, 4)
    if reference is not None:
        if reference.ci95_ms is not None:
            extra[key.REFERENCE_CI95_MS] = list(reference.ci95_ms)
        if reference.conditions:
            extra[key.REFERENCE_TIMING_CONDITIONS] = dict(reference.conditions)
    return extra
