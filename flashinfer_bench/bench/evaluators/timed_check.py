"""How an evaluator checks the timed calls the judge picks: the reference is run again on the same inputs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from flashinfer_bench.bench.calling import clone_inputs, invoke
from flashinfer_bench.bench.judge.context import EvaluationContext

if TYPE_CHECKING:
    from flashinfer_bench.bench.evaluators.evaluator import Baseline, CorrectnessResult, Evaluator

#: Each timed call's outputs are checked with this probability, decided after the call (``extra``:
#: ``timed_check_probability``); the session's planned last call is always checked. Calls beyond it (the timer
#: measures a batch again when the host was late with its launches, timing/api.py) are picked at random only.
DEFAULT_TIMED_CHECK_PROBABILITY = 0.125


class TimedCheck:
    """Checks the outputs of the timed calls the schedule picks: the reference is run on the same inputs."""

    def __init__(self, evaluator: type[Evaluator], ctx: EvaluationContext, baseline: Baseline) -> None:
        self.evaluator, self.ctx, self.baseline = evaluator, ctx, baseline
        self.probability = float(ctx.config.extra.get("timed_check_probability", DEFAULT_TIMED_CHECK_PROBABILITY))

    #: Picked calls are judged in groups (``judge_picked``); a check that keeps large data per call judges them
    #: one at a time.
    grouped = True

    def expected(self, inputs: list[Any]) -> Any:
        """What a call's outputs are judged against, worked out from its inputs (which are not kept): here the
        reference's outputs."""
        assert self.baseline.reference is not None
        ctx = self.ctx
        return invoke(self.baseline.reference, ctx.definition, ctx.workload, clone_inputs(inputs), ctx.device)

    def check(self, calls: list[tuple[tuple[torch.Tensor, ...], Any]]) -> CorrectnessResult | None:
        """The first failing verdict among these timed calls (each its outputs and its ``expected``), or None."""
        return self.evaluator.check_timed_outputs(self.ctx.definition, calls, self.ctx.config)

    def finish(self) -> CorrectnessResult | None:
        """A verdict over all the checked calls together, for checks that need many (sampling)."""
        return None
