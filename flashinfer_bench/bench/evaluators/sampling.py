"""Sampling kernels: outputs are random, so judge the distribution of many draws, not one draw.

For each trial the reference is drawn ``REFERENCE_DRAW_FACTOR`` times as often as the solution, to estimate the
expected distribution with little noise of its own; the solution is drawn ``sampling_validation_trials`` times.
The verdict is the mean over batch rows of the total variation distance between the two per-row histograms.

The draws are seeded (torch's generators, forked so the worker's own state is untouched) by workload, trial
and role, so a verdict is reproducible: the same run judges the same way, on any worker, every time.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from flashinfer_bench.bench.config import ResolvedEvalConfig
from flashinfer_bench.bench.evaluators.calling import Callee, clone_inputs, invoke
from flashinfer_bench.bench.evaluators.compare import structure_mismatch
from flashinfer_bench.bench.evaluators.evaluator import Baseline, CorrectnessResult, Evaluator
from flashinfer_bench.bench.inputs import stable_seed
from flashinfer_bench.data import Correctness, Definition, DType, EvaluationStatus, Workload

DEFAULT_VALIDATION_TRIALS = 100
DEFAULT_TVD_THRESHOLD = 0.2
REFERENCE_DRAW_FACTOR = 4


def vocab_size(definition: Definition, inputs: list[Any]) -> int:
    """Number of categories: the last dimension of the first floating tensor input (the probabilities)."""
    for spec, value in zip(definition.inputs.values(), inputs, strict=True):
        if isinstance(value, torch.Tensor) and DType(spec.dtype).is_floating and value.dim() >= 1:
            return int(value.shape[-1])
    raise ValueError(f"definition '{definition.name}' has no floating tensor input to take the vocabulary size from")


def draw_seed(workload: Workload, trial: int, role: str) -> int:
    return stable_seed(workload.uuid, trial, role)


@contextmanager
def seeded(seed: int, device: str) -> Iterator[None]:
    """torch's default generators (the CPU's and ``device``'s) seeded inside, restored after."""
    devices = [torch.device(device).index or 0] if device.startswith("cuda") else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield


def draw_histogram(callee: Callee, definition: Definition, workload: Workload, inputs: list[Any], device: str,
                   draws: int, vocab: int, seed: int | None = None) -> torch.Tensor:
    """Per-row counts [rows, vocab] of the first output over ``draws`` calls; -1 in a cell means out of range.
    With ``seed``, the draws are made from torch's generators seeded with it."""
    if seed is not None:
        with seeded(seed, device):
            return draw_histogram(callee, definition, workload, inputs, device, draws, vocab)
    counts: torch.Tensor | None = None
    for _ in range(draws):
        samples = torch.as_tensor(invoke(callee, definition, workload, clone_inputs(inputs), device)[0])
        samples = samples.reshape(-1).long()
        if counts is None:
            counts = torch.zeros(samples.numel(), vocab, dtype=torch.float64, device=samples.device)
        if bool(((samples < 0) | (samples >= vocab)).any()):
            counts.fill_(-1)
            return counts
        counts.scatter_add_(1, samples.unsqueeze(1), torch.ones_like(samples, dtype=torch.float64).unsqueeze(1))
    assert counts is not None
    return counts


def total_variation(p_counts: torch.Tensor, q_counts: torch.Tensor) -> torch.Tensor:
    """Per-row TVD between two count tables."""
    p = p_counts / p_counts.sum(dim=1, keepdim=True)
    q = q_counts / q_counts.sum(dim=1, keepdim=True)
    return 0.5 * (p - q).abs().sum(dim=1)


class SamplingEvaluator(Evaluator):
    @classmethod
    def can_evaluate(cls, definition: Definition) -> bool:
        return definition.op_type == "sampling"

    @classmethod
    def build_baseline(cls, definition: Definition, workload: Workload, cfg: ResolvedEvalConfig, device: str, *,
                       trace_set_root: str | None = None, reference: Callee | None = None,
                       profile: bool = True) -> Baseline:
        baseline = super().build_baseline(definition, workload, cfg, device, trace_set_root=trace_set_root,
                                          reference=reference, profile=profile)
        assert baseline.reference is not None
        draws = REFERENCE_DRAW_FACTOR * int(cfg.extra.get("sampling_validation_trials", DEFAULT_VALIDATION_TRIALS))
        baseline.extra["histograms"] = [
            draw_histogram(baseline.reference, definition, workload, x, device, draws, vocab_size(definition, x),
                           seed=draw_seed(workload, trial, "reference"))
            for trial, x in enumerate(baseline.inputs)
        ]
        return baseline

    @classmethod
    def check_timed_outputs(cls, definition: Definition, outputs: tuple[Any, ...], reference: tuple[Any, ...],
                            cfg: ResolvedEvalConfig) -> CorrectnessResult | None:
        """None: one call's draws cannot be compared with the reference's (only their distributions can)."""
        return None

    @classmethod
    def check_correctness(cls, definition: Definition, sol_runnable: Callee, inputs: list[list[Any]],
                          ref_outputs: list[tuple[Any, ...]], cfg: ResolvedEvalConfig, *, workload: Workload,
                          device: str, baseline: Baseline | None = None) -> CorrectnessResult:
        if baseline is None or "histograms" not in baseline.extra:
            raise ValueError("the sampling evaluator needs the baseline built by SamplingEvaluator.build_baseline")
        draws = int(cfg.extra.get("sampling_validation_trials", DEFAULT_VALIDATION_TRIALS))
        threshold = float(cfg.extra.get("sampling_tvd_threshold", DEFAULT_TVD_THRESHOLD))
        worst = 0.0
        trials = zip(inputs, ref_outputs, baseline.extra["histograms"], strict=True)
        for trial, (trial_inputs, reference, ref_hist) in enumerate(trials):
            first = invoke(sol_runnable, definition, workload, clone_inputs(trial_inputs), device)
            mismatch = structure_mismatch(first, reference, list(definition.outputs))
            if mismatch is not None:
                return CorrectnessResult(mismatch[0], message=mismatch[1])
            hist = draw_histogram(sol_runnable, definition, workload, trial_inputs, device, draws, ref_hist.shape[1],
                                  seed=draw_seed(workload, trial, "solution"))
            if bool((hist < 0).any()):
                return CorrectnessResult(EvaluationStatus.INCORRECT_NUMERICAL, message="a sample is outside [0, vocab)")
            worst = max(worst, float(total_variation(hist, ref_hist.to(hist.device)).mean()))
        correctness = Correctness(max_relative_error=worst, max_absolute_error=worst,
                                  extra={"tvd": worst, "tvd_threshold": threshold, "draws": draws})
        if worst > threshold:
            return CorrectnessResult(EvaluationStatus.INCORRECT_NUMERICAL, correctness,
                                     f"total variation distance {worst:.3f} > threshold {threshold}")
        return CorrectnessResult(EvaluationStatus.PASSED, correctness)
