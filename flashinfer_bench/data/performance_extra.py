"""The keys of a trace's optional ``performance.extra`` mapping (ours; upstream's reader drops it): what the
evaluators write (bench/evaluators/evaluator.py) and the reports read (report/noise.py). Meanings:
docs/reports.md."""

TRIAL_LATENCIES_MS = "trial_latencies_ms"
SETTINGS = "settings"
TIMING_METHOD = "timing_method"
SAMPLES = "samples"
LATENCY_STD_MS = "latency_std_ms"
LATENCY_CI95_MS = "latency_ci95_ms"
JUDGE_ESTIMATED_TRIALS = "judge_estimated_trials"
SETUP_LATENCY_MS = "setup_latency_ms"
REFERENCE_CI95_MS = "reference_ci95_ms"
TIMING_CONDITIONS = "timing_conditions"
HOST_BUSY_FRACTION = "host_busy_fraction"
JUDGE_CLOCK_MS = "judge_clock_ms"
TIMED_CALLS = "timed_calls"
REFERENCE_TIMING_CONDITIONS = "reference_timing_conditions"
