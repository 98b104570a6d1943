"""The calls of a timing session picked for checking: their kept outputs, judged after the loop against what the
evaluator expects for the inputs the judge draws again (judge/schedule.py picks them)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from flashinfer_bench.bench.inputs import InputKey
from flashinfer_bench.bench.judge.clock import HostWatch, synchronize
from flashinfer_bench.bench.judge.context import EvaluationContext
from flashinfer_bench.bench.slot import total_bytes

#: The picked calls of a session are checked together (one comparison, evaluator.output_errors_each) in groups
#: whose outputs and reference outputs take at most this many bytes (the comparison's float64 copies of them take
#: up to 4x that for 16-bit outputs).
CHECK_GROUP_BYTES = 16 << 20
#: The judge draws again the inputs of this many picked calls of a session at least, to time its own draw (which a
#: session of calls made one at a time takes out of its windows: judge/schedule.py); beyond them, and in a replayed
#: session, only where the call's expected values are not known yet (the reference must run).
TIMED_DRAWS = 5


class Verdict(Protocol):
    """What a check of picked calls returns (the evaluators' ``CorrectnessResult``)."""

    @property
    def passed(self) -> bool: ...


class PickedCallCheck(Protocol):
    """How an evaluator checks the picked calls of a session (evaluators/evaluator.py ``TimedCheck``)."""

    grouped: bool

    def known(self, key: InputKey) -> Any | None: ...
    def expected(self, key: InputKey, inputs: list[Any]) -> Any: ...
    def check(self, calls: list[tuple[tuple[torch.Tensor, ...], Any]]) -> Verdict | None: ...
    def finish(self) -> Verdict | None: ...


@dataclass
class PickedCall:
    index: int
    #: What its inputs were drawn from: its own seed, or its place in a replayed round.
    key: InputKey
    outputs: tuple[torch.Tensor, ...]


def draw_again(ctx: EvaluationContext, call: PickedCall, draw_ms: list[float], watch: HostWatch | None) -> list[Any]:
    """The call's inputs, drawn again here; the draw's time (less what the judge waited for a CPU) goes into
    ``draw_ms``."""
    synchronize(ctx.device)
    waiting = watch.judge_waiting_ms if watch is not None else (lambda: 0.0)
    start, waited = time.perf_counter(), waiting()
    inputs = ctx.inputs(call.key)
    synchronize(ctx.device)
    draw_ms.append((time.perf_counter() - start) * 1e3 - (waiting() - waited))
    return inputs


def judge_calls(ctx: EvaluationContext, picked: Sequence[PickedCall], draw_ms: list[float],
                watch: HostWatch | None, check: PickedCallCheck, time_draws: bool = True) -> Verdict | None:
    """The first failing verdict among the picked calls (then ``check.finish``'s), or None. The calls are checked in
    groups of at most CHECK_GROUP_BYTES of outputs and expected values (at least one call per group); a call's
    expected values are those known already, else worked out from its inputs drawn again (with ``time_draws``, the
    first TIMED_DRAWS calls' are drawn again in any case, to time the judge's own draw)."""

    def expected(call: PickedCall) -> Any:
        known = check.known(call.key)
        if time_draws and len(draw_ms) < TIMED_DRAWS:
            inputs = draw_again(ctx, call, draw_ms, watch)
        elif known is None:
            inputs = ctx.inputs(call.key)
        else:
            return known
        return known if known is not None else check.expected(call.key, inputs)

    # Outputs and expected values (the reference's outputs) of a group are held together; inputs one at a time.
    size = 2 * total_bytes(ctx.output_layouts)
    per_group = max(1, CHECK_GROUP_BYTES // max(size, 1)) if check.grouped else 1
    for first in range(0, len(picked), per_group):
        group = picked[first:first + per_group]
        result = check.check(list(zip(on_device(ctx, group), map(expected, group), strict=True)))
        if result is not None and not result.passed:
            return result
    return check.finish()


def on_device(ctx: EvaluationContext, calls: Sequence[PickedCall]) -> list[tuple[torch.Tensor, ...]]:
    """The calls' kept outputs (host copies in an arena) on the evaluation's device, copied without waiting where the
    arena is page-locked (judge/arena.py): the schedule synchronises before it hands the arena back."""
    return [tuple(t.to(ctx.device, non_blocking=True) for t in call.outputs) for call in calls]
