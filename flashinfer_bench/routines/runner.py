"""Run one parsed case: pick backends, build inputs, refcheck, time, print [PERF] lines, write CSV rows."""

from __future__ import annotations

import argparse
import importlib
import shlex
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

import torch

from . import log
from .backends import TORCH, default_backends, load_flashinfer, select_backends
from .case import Case, output_tensor
from .cpu_sizes import shrink_for_cpu
from .csv_output import COLUMNS, append_row
from .errors import NoBackendError
from .metrics import tb_per_sec, tflops_per_sec
from .refcheck import compare, tensor_stats
from .specs import ROUTINES

REPRO_PREFIX = "python3 benchmarks/flashinfer_benchmark.py"
Timer = Callable[..., Any]


def default_timer() -> Timer:
    """The project's timer, imported when first needed (flashinfer_bench.testing.bench_gpu_time_detailed)."""
    from flashinfer_bench.testing import bench_gpu_time_detailed

    return bench_gpu_time_detailed


def pick_device() -> torch.device:
    return torch.device("cuda:0") if torch.cuda.is_available() else torch.device("cpu")


def compute_capability(device: torch.device) -> tuple[int, int] | None:
    return torch.cuda.get_device_capability(device) if device.type == "cuda" else None


def device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"


def repro_command(argv: Sequence[str]) -> str:
    return f"{REPRO_PREFIX} {shlex.join(argv)}"


def build_case(
    args: argparse.Namespace, device: torch.device, fi: ModuleType | None, use_cuda_graph: bool
) -> Case:
    module = importlib.import_module(f"{__package__}.{ROUTINES[args.routine].family}")
    return module.build(args, device, fi, use_cuda_graph)


def run_case(
    args: argparse.Namespace,
    argv: Sequence[str],
    *,
    device: torch.device | None = None,
    timer: Timer | None = None,
) -> bool:
    """Run every selected backend of one case; return False when the case failed (error or refcheck mismatch)."""
    spec = ROUTINES[args.routine]
    device = device or pick_device()
    if args.backends is None:
        args.backends = default_backends(args.routine)
    if args.generate_repro_command:
        args.repro_command = repro_command(argv)
    log.info(f"args = {args}")
    log.info(f"Running test{args.routine}")
    fi, fi_error = (None, None)
    if any(b != TORCH for b in args.backends):
        fi, fi_error = load_flashinfer()
        log.info(f"FlashInfer version: {fi.__version__}" if fi is not None else f"FlashInfer not available: {fi_error}")
    if args.generate_repro_command:
        log.info(f"To reproduce this test case, run the following command: {args.repro_command}")
    cc = compute_capability(device)
    backends, warnings = select_backends(args.routine, args.backends, cc, fi_error, args)
    for w in warnings:
        log.warning(w)
    if not backends:
        raise NoBackendError(f"none of the backends asked for ({', '.join(args.backends)}) can run here "
                             f"(device {device_name(device)}); the torch backend runs everywhere")
    if device.type == "cpu" and not args.full_size_on_cpu:
        changes = shrink_for_cpu(args, argv)
        if changes:
            log.info(f"on the CPU, so that this case finishes in seconds: {', '.join(changes)} "
                     "(--full_size_on_cpu keeps the case as given)")
    if args.verbose >= 2:
        log.verbose(2, f"device = {device_name(device)!r}, compute capability = {cc}")
    use_cuda_graph = spec.cuda_graph_stable and not args.no_cuda_graph and device.type == "cuda"
    torch.manual_seed(args.random_seed)
    case = build_case(args, device, fi, use_cuda_graph)
    if args.verbose >= 1:
        for line in case.verbose_lines:
            log.verbose(1, line)

    calls: dict[str, Callable[[], Any]] = {}
    outputs: dict[str, torch.Tensor] = {}
    ok = True
    for backend in backends:
        try:
            calls[backend] = case.make_backend(backend)
            outputs[backend] = output_tensor(calls[backend]())
        except Exception as exc:  # noqa: BLE001 - one backend's failure is reported; the others still run
            log.error(f"{backend} failed on {args.routine}: {type(exc).__name__}: {exc}")
            calls.pop(backend, None)
            ok = False
    if args.refcheck and calls:
        if not _refcheck(args, case, outputs):
            return False
    timer = timer or default_timer()
    for backend, fn in calls.items():
        graph = use_cuda_graph and backend != TORCH  # the torch backend syncs on lengths: not capturable
        result = timer(
            fn,
            enable_cupti=not args.use_cuda_events,
            num_iters=args.num_iters,
            dry_run_iters=args.dry_run_iters,
            cold_l2_cache=device.type == "cuda",  # the host clock has no cache to flush
            use_cuda_graph=graph,
            device=device,
        )
        tflops = tflops_per_sec(case.flops, result.median_ms) if case.flops else None  # None: not counted
        tbs = tb_per_sec(case.num_bytes, result.median_ms) if case.num_bytes else None
        log.line(log.perf_line(backend, result.median_ms, result.std_ms, tflops, tbs))
        if args.output_path:
            row = {
                "routine": args.routine, "median_time": result.median_ms, "std_time": result.std_ms,
                "tflops": tflops, "tb_per_sec": tbs, "backend": backend,
                **{k: getattr(args, k) for k in _csv_flag_columns(args)},
                **case.csv_values,
                "device": result.device, "timing_method": result.method, "cuda_graph": graph,
                "num_samples": len(result.samples_ms), "ci95_low_ms": result.stats.ci95_low_ms,
                "ci95_high_ms": result.stats.ci95_high_ms,
            }
            append_row(args.output_path, row)
    return ok


def _csv_flag_columns(args: argparse.Namespace) -> list[str]:
    return [c for c in COLUMNS if hasattr(args, c) and c not in ("routine", "backend")]


def _refcheck(args: argparse.Namespace, case: Case, outputs: dict[str, torch.Tensor]) -> bool:
    """Compare every backend with the reference; False when a mismatch must stop the case."""
    reference = case.reference()
    if args.verbose >= 2:
        log.verbose(2, f"reference: {tensor_stats(reference)}")
    passed = True
    for backend, out in outputs.items():
        result = compare(out, reference, case.tolerance)
        if args.verbose >= 2:
            log.verbose(2, f"{backend}: {tensor_stats(out)}")
            log.verbose(2, f"{backend}: max abs diff {result.max_abs_diff:.6g} at index {result.worst_index} "
                           f"(output {result.worst_value:.6g}, reference {result.worst_reference:.6g}); "
                           f"{result.close_fraction:.2%} of elements within tolerance")
        if not result.passed:
            log.error(
                f"Output mismatch between backends {backend} and reference (torch, {reference.dtype}): "
                f"{result.num_outside} of {out.numel()} elements outside atol={case.tolerance.atol} (x max(1, rms(ref))) "
                f"rtol={case.tolerance.rtol}; max abs diff {result.max_abs_diff:.6g} at {result.worst_index}"
            )
            passed = False
    if not passed and not args.allow_output_mismatch:
        return False
    return True
