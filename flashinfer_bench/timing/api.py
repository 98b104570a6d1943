"""``bench_gpu_time`` and ``bench_gpu_time_detailed``: the timing API everything else calls."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

import torch

from . import notices
from .adaptive import AdaptiveOutcome, sample_until
from .clocks import clock_drop_warning, sm_clock_mhz
from .cuda_sampler import CudaSampler
from .cupti_timer import CUPTI_MISSING, load_cupti, tracing_held
from .devices import device_name, resolve_device
from .graph import WARM_CALLS_PER_GRAPH, GraphCaptureFailed, capture
from .host import measure_host
from .l2 import (
    MAX_ROTATION_COPIES,
    ArgSet,
    copies_needed,
    l2_cache_bytes,
    rotating_arg_sets,
    tensor_bytes,
)
from .lead_in import lead_in_step
from .options import TimingOptions
from .result import (
    CUDA_EVENTS,
    CUPTI,
    FLUSH_L2,
    HOST_CLOCK,
    ROTATE_BUFFERS,
    WARM,
    TimingResult,
)
from .stats import summarize
from .steps import SampleSteps, Step, nothing

# A median whose 95% CI is wider than this percentage of it is reported as noisy.
NOISE_LIMIT_PCT = 10.0



def bench_gpu_time(
    fn: Callable[..., Any],
    args: tuple[Any, ...] = (),
    kwargs: Mapping[str, Any] | None = None,
    *,
    enable_cupti: bool = True,
    num_iters: int = 30,
    dry_run_iters: int = 5,
    cold_l2_cache: bool = False,
    rotate_buffers: bool = False,
    use_cuda_graph: bool = False,
    device: str | int | torch.device | None = None,
) -> tuple[float, float]:
    """Median and standard deviation of one call of ``fn(*args, **kwargs)``, in milliseconds.

    See :func:`bench_gpu_time_detailed` for the arguments.
    """
    options = TimingOptions(enable_cupti=enable_cupti, num_iters=num_iters, dry_run_iters=dry_run_iters,
                            cold_l2_cache=cold_l2_cache, rotate_buffers=rotate_buffers,
                            use_cuda_graph=use_cuda_graph)
    result = time_callable(fn, args, kwargs, options, device=device)
    return result.median_ms, result.std_ms


def bench_gpu_time_detailed(
    fn: Callable[..., Any],
    args: tuple[Any, ...] = (),
    kwargs: Mapping[str, Any] | None = None,
    *,
    enable_cupti: bool = True,
    num_iters: int = 30,
    dry_run_iters: int = 5,
    cold_l2_cache: bool = False,
    rotate_buffers: bool = False,
    use_cuda_graph: bool = False,
    device: str | int | torch.device | None = None,
    target_ci_pct: float | None = None,
    time_budget_s: float | None = None,
    before_each: Step | None = None,
    after_each: Step | None = None,
    cupti_most_activities: int | None = None,
) -> TimingResult:
    """Time ``fn(*args, **kwargs)`` and return every sample with the conditions it was taken under.

    Args:
        enable_cupti: time GPU work from CUPTI kernel records (all streams); falls back to CUDA events,
            with one warning per process, when cupti-python is missing. False forces CUDA events.
        num_iters: samples to take (the first batch when sampling adaptively).
        dry_run_iters: untimed warm-up calls before measuring.
        cold_l2_cache: evict the L2 before each sample (flush, or rotation under a CUDA graph).
        rotate_buffers: rotate through copies of the tensor arguments whose total exceeds the L2.
        use_cuda_graph: capture several calls into a CUDA graph and time its replays.
        device: where to time; None infers it from the tensors in args/kwargs (CPU: host clock).
        target_ci_pct: keep sampling, in batches of num_iters, until the 95% CI of the median is narrower
            than this percentage of the median (or the budget is spent; 10 s when not given).
        time_budget_s: seconds of sampling allowed; alone, sampling continues until it is spent.
        before_each: untimed work before each dry run and each sample, given its index (samples count from 0
            again after the dry runs); on a GPU it runs once the previous call's work has finished, and is
            queued ahead of the lead-in, outside the sample. The evaluators use it to give the same tensors new
            input values between timed calls.
        after_each: untimed work after each dry run and each sample, given its index, once its work has
            finished (on a GPU, side streams included) and before the timer works on the samples. The evaluators
            use it to keep each call's outputs and to tell the judge when a round of calls has ended.
        cupti_most_activities: time with CUPTI only while the dry runs make at most this many GPU activities
            (kernels, copies, fills) per call; beyond it, with CUDA events, noted in the warnings. CUPTI's record
            processing costs host time per activity (about 2 us a record with cupti-python 13.4, 50 with 13.0),
            while what its span adds over events is the lead before the first launch, which a call of many
            launches dwarfs. The evaluators set it; None (the default) never switches.
    """
    options = TimingOptions(enable_cupti=enable_cupti, num_iters=num_iters, dry_run_iters=dry_run_iters,
                            cold_l2_cache=cold_l2_cache, rotate_buffers=rotate_buffers,
                            use_cuda_graph=use_cuda_graph, target_ci_pct=target_ci_pct,
                            time_budget_s=time_budget_s, cupti_most_activities=cupti_most_activities)
    return time_callable(fn, args, kwargs, options, device=device, before_each=before_each, after_each=after_each)


def time_callable(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any] | None,
    options: TimingOptions,
    *,
    device: str | int | torch.device | None = None,
    before_each: Step | None = None,
    after_each: Step | None = None,
) -> TimingResult:
    """``bench_gpu_time_detailed`` with its options in one object."""
    call_kwargs = dict(kwargs or {})
    dev = resolve_device(device, args, call_kwargs)
    if dev.type == "cuda":
        with torch.cuda.device(dev):
            return _time_cuda(fn, tuple(args), call_kwargs, dev, options, before_each, after_each)
    return _time_host(fn, tuple(args), call_kwargs, dev, options, before_each, after_each)


def _then(first: Step | None, second: Step) -> Step:
    """``first`` then ``second``, for each index (just ``second`` without a first)."""
    if first is None:
        return second

    def both(i: int) -> None:
        first(i)
        second(i)

    return both


#: What the host clock says when CUPTI was asked for (the default) and there is no CUDA device to trace.
HOST_FALLBACK = "CUPTI needs a CUDA device; timed with the host clock (enable_cupti=False says so without this warning)."


def _time_host(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    dev: torch.device,
    options: TimingOptions,
    before_each: Step | None,
    after_each: Step | None,
) -> TimingResult:
    notes: list[str] = []
    if options.cold:
        notices.warn("A cold cache is not available on the host clock; timed with a warm cache.", notes)
    if options.use_cuda_graph:
        notices.warn("CUDA graphs need a CUDA device; timed without a graph.", notes)
    if options.enable_cupti:
        notices.warn_once(HOST_FALLBACK, notes)

    def body(_: int) -> None:
        fn(*args, **kwargs)

    prepare = _then(before_each, nothing)
    for i in range(options.dry_run_iters):
        prepare(i)
        body(i)
        if after_each is not None:
            after_each(i)
    sampler = _IndexedBatches(lambda indices: measure_host(prepare, body, indices, after_each))
    outcome = sample_until(sampler, options.num_iters, options.target_ci_pct, options.time_budget_s)
    return _finish(outcome, options, notes, method=HOST_CLOCK, dev=dev, policy=WARM)


class _IndexedBatches:
    """Adapts a measurer over sample indices to ``measure_batch(k)``; indices continue across batches so
    that buffer rotation carries on where the previous batch stopped."""

    def __init__(self, measure: Callable[[range], list[float]]) -> None:
        self.measure = measure
        self.next_index = 0

    def __call__(self, k: int) -> list[float]:
        indices = range(self.next_index, self.next_index + k)
        self.next_index += k
        return self.measure(indices)


def _cache_setup(
    dev: torch.device,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    options: TimingOptions,
    notes: list[str],
) -> tuple[str, list[ArgSet]]:
    """The cache policy and the argument sets to cycle through.

    Rotation is used when asked for, and for a cold cache under a CUDA graph (a flush inside the graph
    would be timed); it needs enough tensor bytes to cover the L2 in at most MAX_ROTATION_COPIES copies,
    and otherwise the L2 is flushed before each sample (under a graph: one call per replay).
    """
    base: list[ArgSet] = [(tuple(args), kwargs)]
    if not options.cold:
        return WARM, base
    if options.rotate_buffers or options.use_cuda_graph:
        nbytes = tensor_bytes(args, kwargs)
        copies = copies_needed(nbytes, l2_cache_bytes(dev)) if nbytes > 0 else MAX_ROTATION_COPIES + 1
        if copies <= MAX_ROTATION_COPIES:
            try:
                return ROTATE_BUFFERS, rotating_arg_sets(args, kwargs, copies)
            except torch.cuda.OutOfMemoryError:
                reason = f"{copies} copies of the arguments do not fit in device memory"
        else:
            reason = f"the arguments hold {nbytes} tensor bytes, too few to rotate past the L2"
        if options.rotate_buffers:
            notices.warn(f"rotate_buffers: {reason}; flushing the L2 before each sample instead.", notes)
    return FLUSH_L2, base


def choose_method(enable_cupti: bool, notes: list[str]) -> tuple[str, Any]:
    """(method, cupti module or None) for a CUDA device: CUPTI when enabled and installed, else CUDA events
    (with FlashInfer's warning, logged once per process, when CUPTI was wanted but is missing)."""
    if not enable_cupti:
        return CUDA_EVENTS, None
    cupti = load_cupti()
    if cupti is None:
        notices.warn_once(CUPTI_MISSING, notes)
        return CUDA_EVENTS, None
    return CUPTI, cupti


def _time_cuda(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    dev: torch.device,
    options: TimingOptions,
    before_each: Step | None,
    after_each: Step | None,
) -> TimingResult:
    notes: list[str] = []
    method, cupti = choose_method(options.enable_cupti, notes)
    policy, arg_sets = _cache_setup(dev, args, kwargs, options, notes)

    def call(k: int) -> None:
        call_args, call_kwargs = arg_sets[k % len(arg_sets)]
        fn(*call_args, **call_kwargs)

    steps = SampleSteps(lead_in=lead_in_step(dev, flush=policy == FLUSH_L2), body=call, setup=before_each,
                        after=after_each)
    sampler = CudaSampler(method, cupti, steps, 1, dev, notes, options.cupti_most_activities)
    # Eager calls: the dry runs and every batch share one switch of CUPTI's tracing (a graph is captured
    # untraced).
    held = tracing_held(cupti) if method == CUPTI and not options.use_cuda_graph else contextlib.nullcontext()
    with held:
        sampler.warm_up(options.dry_run_iters, traced=not options.use_cuda_graph)

        calls, graphed = 1, False
        if options.use_cuda_graph:
            calls = {WARM: WARM_CALLS_PER_GRAPH, FLUSH_L2: 1, ROTATE_BUFFERS: len(arg_sets)}[policy]
            try:
                graph = capture(call, calls, dev)
            except GraphCaptureFailed as exc:
                notices.warn(f"CUDA graph capture failed ({exc}); timing without a graph.", notes)
                calls = 1
            else:
                graph.replay()
                torch.cuda.synchronize(dev)
                sampler.steps = SampleSteps(steps.lead_in, lambda _: graph.replay(), steps.setup, steps.after)
                sampler.calls, graphed = calls, True

        clocks_before = sm_clock_mhz(dev)
        outcome = sample_until(_IndexedBatches(sampler), options.num_iters, options.target_ci_pct,
                               options.time_budget_s)
        clocks_after = sm_clock_mhz(dev)
    if sampler.dropped:
        notices.warn(f"{sampler.dropped} samples recorded no GPU work under CUPTI and were dropped.", notes)
    if sampler.estimated_samples:
        if sampler.device_launch_ns is not None:
            estimate = f"{sampler.device_launch_ns / 1e3:.2f} us, this device's measured figure"
        elif sampler.launch_ns is not None:
            estimate = f"{sampler.launch_ns / 1e3:.2f} us, observed before fn's first launch"
        else:
            estimate = "never observed here, so the part of each gap after its launch call returned"
        notices.warn(
            f"In {sampler.estimated_samples} samples fn's host work left the GPU idle before a launch; each such "
            f"gap was counted as launch processing ({estimate}) rather than measured, so those samples carry "
            "about that much uncertainty per late launch.",
            notes,
        )
    if sampler.early_start_samples:
        notices.warn(
            f"In {sampler.early_start_samples} samples a kernel of fn started before the work ahead of it on its "
            "stream had ended (programmatic dependent launch): its launch was hidden behind that work and is not "
            "in the time. Nsight Compute runs kernels one at a time and would count about one launch (1.4-1.9 us "
            "measured on an H100) more per such kernel.",
            notes,
        )
    drop = clock_drop_warning(clocks_before, clocks_after)
    if drop:
        notices.warn(drop, notes)
    return _finish(outcome, options, notes, method=sampler.method, dev=dev, policy=policy, graphed=graphed,
                   clocks=(clocks_before, clocks_after), calls=calls,
                   kernel_samples=sampler.kernel_samples if sampler.method == CUPTI else None,
                   activities_per_call=sampler.activities_per_call)


def _finish(
    outcome: AdaptiveOutcome,
    options: TimingOptions,
    notes: list[str],
    *,
    method: str,
    dev: torch.device,
    policy: str,
    graphed: bool = False,
    clocks: tuple[int | None, int | None] = (None, None),
    calls: int = 1,
    kernel_samples: list[float] | None = None,
    activities_per_call: float | None = None,
) -> TimingResult:
    stats = summarize(outcome.samples)
    width = stats.ci95_width_pct
    if options.target_ci_pct is not None and not outcome.target_met:
        notices.warn(
            f"The 95% CI of the median is {width:.1f}% of it after {stats.n} samples, "
            f"not under the target {options.target_ci_pct:g}%: the time budget ran out.",
            notes,
        )
    elif width > NOISE_LIMIT_PCT:
        notices.warn(
            f"Noisy samples: the 95% CI of the median spans {width:.1f}% of it (n={stats.n}); "
            "take more iterations or set target_ci_pct.",
            notes,
        )
    return TimingResult(
        samples_ms=list(outcome.samples),
        method=method,
        cuda_graph=graphed,
        device=device_name(dev),
        cache_policy=policy,
        clocks_before=clocks[0],
        clocks_after=clocks[1],
        stats=stats,
        calls_per_sample=calls,
        warnings=notes,
        kernel_samples_ms=kernel_samples,
        activities_per_call=activities_per_call,
    )
