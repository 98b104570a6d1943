"""How many calls a timing session makes (``session_calls``): the configured ones, or fewer where a call is slow."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flashinfer_bench.bench.config import ResolvedEvalConfig

if TYPE_CHECKING:
    from flashinfer_bench.bench.judge.context import EvaluationContext
    from flashinfer_bench.bench.judge.solution import SolutionHandle

#: A timing session makes the configured calls, or fewer where its calls are slow: as many as its latest known call
#: would take the session's time for (``REFERENCE_SESSION_MS``, ``SOLUTION_SESSION_MS``), at least
#: ``SESSION_LEAST_CALLS``, the warm-up shrunk with them. A slow reference is far slower than the solutions it is the
#: speed-up's baseline for, so a few samples place it well enough, and its sessions are paid for on every workload;
#: a solution's session of multi-second calls (the real dataset's mla_paged_prefill reference, submitted as a
#: solution: 2.3-3.2 s a call at its largest workload) at the defaults would make 60 of them and outlast the item's
#: timeout.
REFERENCE_SESSION_MS, SOLUTION_SESSION_MS, SESSION_LEAST_CALLS = 100.0, 1000.0, 3
#: A session of calls this long made one at a time has no warm-up: the call just before it, in the same process
#: (the baseline's last trial for the reference, the last correctness call for a solution), warmed it. A replayed
#: session keeps one: its replays begin where its warm-up ends (bench/harness.py).
WARMED_BY_ONE_CALL_MS = 100.0


#: From a latest call this long on (ms), a solution's session made one at a time is planned alike whatever the call's
#: length: ``SESSION_LEAST_CALLS`` calls (fewer where configured so), no warm-up (evaluators/ahead.py).
SLOW_CALL_MS = max(SOLUTION_SESSION_MS / SESSION_LEAST_CALLS, WARMED_BY_ONE_CALL_MS)


def session_purpose(trial: int) -> tuple[str, int]:
    """What the seeds of a solution's timing session for ``trial`` derive from (``EvaluationContext.seed_stream``)."""
    return "timed", trial


def asks_replays(ctx: EvaluationContext, solution: SolutionHandle) -> bool:
    """Whether the solution's timing sessions ask for their calls to be replayed from CUDA graphs: where the inputs
    can be drawn on the device and the solution did not refuse replays before (judge/solution.py SolutionFacts)."""
    return ctx.input_plan.replay_obstacle is None and not solution.facts.replays_refused


def session_calls(cfg: ResolvedEvalConfig, call_ms: float | None, session_ms: float,
                  replayed: bool = False) -> tuple[int, int]:
    """(warm-up calls, timed calls) of a timing session whose latest known call took ``call_ms`` (None: unknown),
    sized for ``session_ms`` of calls; ``replayed``: its calls may be replayed from a CUDA graph."""
    iterations = cfg.iterations
    if call_ms is None or call_ms <= 0:
        return cfg.warmup_runs, iterations
    iterations = min(iterations, max(SESSION_LEAST_CALLS, int(session_ms / call_ms)))
    if call_ms >= WARMED_BY_ONE_CALL_MS and not replayed:
        return 0, iterations
    warmup = min(cfg.warmup_runs, max(1, -(-cfg.warmup_runs * iterations // max(cfg.iterations, 1))))
    return warmup, iterations


def fewer_calls_note(cfg: ResolvedEvalConfig, warmup: int, iterations: int, call_ms: float) -> str:
    """The trace's log line for a solution's sessions planned with fewer calls than configured (``session_calls``;
    replayed rounds make more than planned, and the trace's ``timed_calls`` says how many were made)."""
    return (f"timing: {warmup} warm-up and {iterations} timed calls planned per session (configured: "
            f"{cfg.warmup_runs} and {cfg.iterations}): a call took {call_ms:.1f} ms on the judge's clock, and a "
            f"session plans about {SOLUTION_SESSION_MS / 1e3:g} s of calls, at least {SESSION_LEAST_CALLS}")
