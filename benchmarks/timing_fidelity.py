"""How close each timing method comes to Nsight Compute's kernel durations.

Times the cases below with every method of ``flashinfer_bench.testing.bench_gpu_time_detailed`` (cold L2, as
ncu flushes caches before each kernel), reads each case's ``gpu__time_duration.sum`` from ncu where ncu is
installed, and prints a compact table (per-call us, and % error against ncu). Full results go to JSON.

    python benchmarks/timing_fidelity.py --out $OUT/timing_fidelity.json

Cases: a bf16 4096^3 matmul; rms_norm on 1x4096 bf16 (one Triton kernel); a multiply of a 64 MiB bf16
tensor by 2; a function of several small kernels; a function that leaves a 4096^3 matmul on a side stream
without joining it back (CUPTI must count it; CUDA events cannot); rms_norm launched after 30 and 200 us of host
work, and two kernels with 30 us of host work between them (a library call's host-side preparation: ncu counts
the kernels, never the host's time). Where FlashInfer is installed, also four of its calls as a user times them
(issue 11): ``flashinfer.norm.rmsnorm`` on 1x4096 bf16, and a paged decode wrapper's ``run()`` (fa2, page 16,
head dim 128) at batch 1 / kv 1024 / 32:8 heads, batch 4 / kv 2048 / 32:8 and batch 32 / kv 8192 / 64:8; the
wrapper checks its arguments on the host before launching, and the smaller two launch a second kernel that
merges the split KV. ``--ncu-target CASE`` is the mode ncu profiles: it runs the case a few times inside an
NVTX range named "fid".
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import torch
import triton
import triton.language as tl

from flashinfer_bench.testing import bench_gpu_time_detailed
from flashinfer_bench.timing.l2 import flush_l2

NCU_CALLS = 5
NUM_ITERS = 100
DRY_RUN_ITERS = 10
Case = tuple[Callable[..., Any], tuple[Any, ...]]


@triton.jit
def _rms_norm_kernel(x_ptr, w_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(out_ptr + row * n_cols + cols, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


def _rms_norm_case(dev: torch.device) -> Case:
    def rms_norm(x: torch.Tensor, w: torch.Tensor, out: torch.Tensor) -> None:
        _rms_norm_kernel[(x.shape[0],)](x, w, out, x.shape[1], 1e-6, BLOCK=triton.next_power_of_2(x.shape[1]))

    x = torch.randn(1, 4096, dtype=torch.bfloat16, device=dev)
    w = torch.randn(4096, dtype=torch.bfloat16, device=dev)
    return rms_norm, (x, w, torch.empty_like(x))


def _torch_rms_norm_case(dev: torch.device) -> Case:
    x = torch.randn(1, 4096, dtype=torch.bfloat16, device=dev)
    w = torch.randn(4096, dtype=torch.bfloat16, device=dev)

    def rms_norm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.rms_norm(x, (x.shape[-1],), w, eps=1e-6)

    return rms_norm, (x, w)


def _matmul_case(dev: torch.device) -> Case:
    a = torch.randn(4096, 4096, dtype=torch.bfloat16, device=dev)
    b = torch.randn(4096, 4096, dtype=torch.bfloat16, device=dev)
    return torch.matmul, (a, b)


def _mul_case(dev: torch.device) -> Case:
    x = torch.randn(32 * 1024 * 1024, dtype=torch.bfloat16, device=dev)  # 64 MiB

    def mul2(x: torch.Tensor, out: torch.Tensor) -> None:
        torch.mul(x, 2, out=out)

    return mul2, (x, torch.empty_like(x))


def _multi_case(dev: torch.device) -> Case:
    x = torch.randn(64, 1024, dtype=torch.bfloat16, device=dev)
    w = torch.randn(1024, 1024, dtype=torch.bfloat16, device=dev)

    def several(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return torch.softmax(torch.relu(x @ w), dim=-1) + 1.0

    return several, (x, w)


def _side_stream_case(dev: torch.device) -> Case:
    side = torch.cuda.Stream(dev)
    a = torch.randn(4096, 4096, dtype=torch.bfloat16, device=dev)
    b = torch.randn(4096, 4096, dtype=torch.bfloat16, device=dev)
    c = torch.empty_like(a)
    small = torch.randn(4096, dtype=torch.bfloat16, device=dev)
    small_out = torch.empty_like(small)

    def hidden_work(small: torch.Tensor, small_out: torch.Tensor) -> None:
        torch.mul(small, 2, out=small_out)
        side.wait_stream(torch.cuda.current_stream(dev))
        with torch.cuda.stream(side):
            torch.matmul(a, b, out=c)  # never joined back to the caller's stream

    return hidden_work, (small, small_out)


def host_work(us: float) -> None:
    """Keep the host busy for ``us`` microseconds (a wrapper's argument checks, a plan): no GPU work, no sleep."""
    end = time.perf_counter() + us * 1e-6
    while time.perf_counter() < end:
        pass


def _late_case(us: float) -> Callable[[torch.device], Case]:
    """rms_norm 1x4096 launched after ``us`` of host work inside the timed call."""

    def case(dev: torch.device) -> Case:
        rms_norm, args = _torch_rms_norm_case(dev)

        def late(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
            host_work(us)
            return rms_norm(x, w)

        return late, args

    return case


def _two_kernels_apart_case(dev: torch.device) -> Case:
    """Two kernels with 30 us of host work between their launches."""
    rms_norm, args = _torch_rms_norm_case(dev)

    def apart(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        y = rms_norm(x, w)
        host_work(30)
        return torch.mul(y, 2)

    return apart, args


def _flashinfer_rmsnorm_case(dev: torch.device) -> Case:
    import flashinfer

    x = torch.randn(1, 4096, dtype=torch.bfloat16, device=dev)
    w = torch.randn(4096, dtype=torch.bfloat16, device=dev)
    return flashinfer.norm.rmsnorm, (x, w)


def _flashinfer_decode_case(batch: int, kv_len: int, qo_heads: int) -> Callable[[torch.device], Case]:
    """A planned BatchDecodeWithPagedKVCacheWrapper; the timed call is ``run(q, kv_cache)`` as a user makes it."""

    def case(dev: torch.device) -> Case:
        import flashinfer

        page, dim, kv_heads = 16, 128, 8
        pages = -(-kv_len // page)
        kv = torch.randn(batch * pages, 2, page, kv_heads, dim, dtype=torch.bfloat16, device=dev)
        q = torch.randn(batch, qo_heads, dim, dtype=torch.bfloat16, device=dev)
        indptr = torch.arange(batch + 1, dtype=torch.int32, device=dev) * pages
        indices = torch.arange(batch * pages, dtype=torch.int32, device=dev)
        last = torch.full((batch,), (kv_len - 1) % page + 1, dtype=torch.int32, device=dev)
        workspace = torch.empty(128 << 20, dtype=torch.uint8, device=dev)
        wrapper = flashinfer.BatchDecodeWithPagedKVCacheWrapper(workspace, "NHD")
        wrapper.plan(indptr, indices, last, qo_heads, kv_heads, dim, page,
                     q_data_type=torch.bfloat16, kv_data_type=torch.bfloat16)
        return wrapper.run, (q, kv)

    return case


def _routine_case(line: str, backend: str) -> Callable[[torch.device], Case]:
    """The call the routine CLI times for ``backend`` on a line of its test list (eager, as the CLI with
    --no_cuda_graph): where our CLI and FlashInfer's disagree (issue 11), ncu says which is the GPU's time."""

    def case(dev: torch.device) -> Case:
        import flashinfer

        from flashinfer_bench.routines.args import parse_case
        from flashinfer_bench.routines.runner import build_case

        args = parse_case(line.split())
        torch.manual_seed(args.random_seed)
        return build_case(args, dev, flashinfer, use_cuda_graph=False).make_backend(backend), ()

    return case


_PAGED_PREFILL = ("--routine BatchPrefillWithPagedKVCacheWrapper --backends fa2 --page_size 16 --batch_size 16 "
                  "--s_qo 1024 --s_kv 1024 --num_qo_heads 8 --num_kv_heads 8 --head_dim_qk 128 --head_dim_vo 128 "
                  "--random_actual_seq_len --causal --no_cuda_graph")
_RANDOM_DECODE = ("--routine BatchDecodeWithPagedKVCacheWrapper --backends fa2_tc --page_size 16 --batch_size 16 "
                  "--s_qo 1 --s_kv 8192 --num_qo_heads 64 --num_kv_heads 8 --head_dim_qk 128 --head_dim_vo 128 "
                  "--random_actual_seq_len --no_cuda_graph")


def _has_flashinfer() -> bool:
    try:
        import flashinfer  # noqa: F401
    except ImportError:
        return False
    return True


FLASHINFER_CASES: dict[str, Callable[[torch.device], Case]] = {
    "fi_rmsnorm_1x4096": _flashinfer_rmsnorm_case,
    "fi_decode_b1_kv1024": _flashinfer_decode_case(1, 1024, 32),
    "fi_decode_b4_kv2048": _flashinfer_decode_case(4, 2048, 32),
    "fi_decode_b32_kv8192": _flashinfer_decode_case(32, 8192, 64),
    # The parity test list's lines where the two CLIs differed most (docs/measurements.md: +7.3% and -8.4%).
    "fi_paged_prefill_random_fa2": _routine_case(_PAGED_PREFILL, "fa2"),
    "fi_decode_random_fa2_tc": _routine_case(_RANDOM_DECODE, "fa2_tc"),
}
CASES: dict[str, Callable[[torch.device], Case]] = {
    "matmul_bf16_4096": _matmul_case,
    "rms_norm_1x4096": _torch_rms_norm_case,
    "rms_norm_triton_1x4096": _rms_norm_case,
    "mul2_64MiB_bf16": _mul_case,
    "several_small_kernels": _multi_case,
    "side_stream_matmul": _side_stream_case,
    # A launch the host makes late (issue 11): ncu counts the kernels alone, never the host's time.
    "rms_norm_after_30us_host": _late_case(30),
    "rms_norm_after_200us_host": _late_case(200),
    "two_kernels_30us_apart": _two_kernels_apart_case,
    **(FLASHINFER_CASES if _has_flashinfer() else {}),
}
# The cases issue 11 holds to 3% of ncu's per-call sum besides the single kernels.
HOST_LATE = ("rms_norm_after_30us_host", "rms_norm_after_200us_host", "two_kernels_30us_apart", *FLASHINFER_CASES)
SINGLE_KERNEL = ("matmul_bf16_4096", "rms_norm_1x4096", "rms_norm_triton_1x4096", "mul2_64MiB_bf16")
# Calls of several kernels in sequence: ncu's default flushes every cache before each kernel, where the call
# itself starts its later kernels on what the earlier ones left in the L2 (the diagnostics compare both).
MULTI_KERNEL = ("several_small_kernels", "two_kernels_30us_apart")
# (label, enable_cupti, use_cuda_graph)
METHODS = [
    ("cupti", True, False),
    ("events", False, False),
    ("events+graph", False, True),
    ("cupti+graph", True, True),
]


def ncu_target(name: str) -> None:
    """Run one case NCU_CALLS times inside NVTX ranges, each after an L2 flush outside the range."""
    dev = torch.device("cuda", 0)
    fn, args = CASES[name](dev)
    for _ in range(3):
        fn(*args)
    torch.cuda.synchronize(dev)
    for _ in range(NCU_CALLS):
        flush_l2(dev)  # the library's own flush, so ncu --cache-control none sees what CUPTI sees
        torch.cuda.synchronize(dev)
        torch.cuda.nvtx.range_push("fid")
        fn(*args)
        torch.cuda.synchronize(dev)
        torch.cuda.nvtx.range_pop()


_UNIT_TO_US = {
    "nsecond": 1e-3,
    "ns": 1e-3,
    "usecond": 1.0,
    "us": 1.0,
    "msecond": 1e3,
    "ms": 1e3,
    "second": 1e6,
}


def parse_ncu_csv(text: str) -> list[tuple[str, float]]:
    """(kernel name, duration us) per profiled kernel from ``ncu --csv`` output."""
    rows = list(csv.reader(line for line in text.splitlines() if line.startswith('"')))
    header_at = next(i for i, row in enumerate(rows) if "Metric Value" in row)
    header = rows[header_at]
    name_col, unit_col, value_col = (header.index(k) for k in ("Kernel Name", "Metric Unit", "Metric Value"))
    kernels = []
    for row in rows[header_at + 1 :]:
        if len(row) == len(header):
            value = float(row[value_col].replace(",", ""))
            kernels.append((row[name_col], value * _UNIT_TO_US[row[unit_col]]))
    return kernels


def run_ncu(name: str, log: dict[str, Any], cache_control: str = "all") -> dict[str, Any] | None:
    """ncu's per-call duration of a case: the sum of its kernels' gpu__time_duration, median over calls.

    ``cache_control="all"`` (ncu's default) flushes every cache before each kernel: the reference.
    """
    ncu = shutil.which("ncu")
    if ncu is None:
        return None
    cmd = [
        ncu,
        "--clock-control",
        "none",
        "--cache-control",
        cache_control,
        "--metrics",
        "gpu__time_duration.sum",
        "--csv",
        "--nvtx",
        "--nvtx-include",
        "fid/",
        sys.executable,
        os.path.abspath(__file__),
        "--ncu-target",
        name,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    log[f"{name}/{cache_control}"] = {
        "cmd": " ".join(cmd),
        "rc": proc.returncode,
        "stdout": proc.stdout[-20000:],
        "stderr": proc.stderr[-5000:],
    }
    try:
        kernels = parse_ncu_csv(proc.stdout)
    except (StopIteration, ValueError, KeyError):
        return None
    if not kernels or len(kernels) % NCU_CALLS:
        return {"kernels": kernels, "per_call_us": sum(d for _, d in kernels) / NCU_CALLS}
    per_call = len(kernels) // NCU_CALLS
    sums = [sum(d for _, d in kernels[i : i + per_call]) for i in range(0, len(kernels), per_call)]
    return {"kernels": kernels, "kernels_per_call": per_call, "per_call_us": statistics.median(sums)}


def time_case(name: str, dev: torch.device) -> dict[str, dict[str, Any]]:
    """Each method's result as a dict, or {"error": ...} where the method raised."""
    fn, args = CASES[name](dev)
    results: dict[str, dict[str, Any]] = {}
    for label, cupti, graph in METHODS:
        try:
            results[label] = bench_gpu_time_detailed(
                fn,
                args,
                enable_cupti=cupti,
                use_cuda_graph=graph,
                cold_l2_cache=True,
                num_iters=NUM_ITERS,
                dry_run_iters=DRY_RUN_ITERS,
            ).to_dict()
        except Exception as exc:
            results[label] = {"error": f"{type(exc).__name__}: {exc}"}
    return results


def overhead(dev: torch.device) -> dict[str, float]:
    """Wall time of one worker-style call (50 iterations, 10 dry runs) minus the kernel time, ms."""
    fn, args = _rms_norm_case(dev)
    out = {}
    for label, cupti in (("cupti", True), ("events", False)):
        for _ in range(2):  # the second call is the steady state (CUPTI set up, Triton compiled)
            start = time.perf_counter()
            res = bench_gpu_time_detailed(fn, args, enable_cupti=cupti, num_iters=50, dry_run_iters=10)
            wall_ms = (time.perf_counter() - start) * 1e3
        out[label] = wall_ms - 60 * res.median_ms
    return out


def extras(dev: torch.device) -> dict[str, Any]:
    """Other paths worth seeing on a GPU: warm cache, rotating buffers, adaptive sampling."""
    out: dict[str, Any] = {}
    fn, args = _mul_case(dev)
    out["mul2_cupti_warm"] = bench_gpu_time_detailed(fn, args, num_iters=50).to_dict()
    out["mul2_cupti_rotate"] = bench_gpu_time_detailed(fn, args, num_iters=50, rotate_buffers=True).to_dict()
    fn, args = _rms_norm_case(dev)
    out["rms_norm_cupti_target_1pct"] = bench_gpu_time_detailed(
        fn, args, num_iters=30, cold_l2_cache=True, target_ci_pct=1.0, time_budget_s=3.0
    ).to_dict()
    return out


def diagnostics(dev: torch.device, names: list[str], no_ncu: bool, log: dict[str, Any]) -> dict[str, Any]:
    """Where CUPTI and ncu differ, why: ncu without its cache flush (the call's own flush before it, none between
    its kernels), CUPTI warm, CUPTI with a write-only flush."""
    from flashinfer_bench.timing import l2

    out: dict[str, Any] = {}
    for name in (*SINGLE_KERNEL, *MULTI_KERNEL):
        if name not in names:
            continue
        fn, args = CASES[name](dev)
        row: dict[str, Any] = {"ncu_no_cache_control": None if no_ncu else run_ncu(name, log, "none")}
        row["cupti_warm"] = bench_gpu_time_detailed(
            fn, args, num_iters=NUM_ITERS, dry_run_iters=DRY_RUN_ITERS
        ).to_dict()
        l2.FLUSH_READ_BACK = False
        try:
            row["cupti_flush_write_only"] = bench_gpu_time_detailed(
                fn, args, cold_l2_cache=True, num_iters=NUM_ITERS, dry_run_iters=DRY_RUN_ITERS
            ).to_dict()
        finally:
            l2.FLUSH_READ_BACK = True
        out[name] = row
    return out


def _save(report: dict[str, Any], path: str) -> None:
    with open(path, "w") as f:
        json.dump(report, f, indent=1)


def _median_us(result: dict[str, Any]) -> float | None:
    return result["stats"]["median_ms"] * 1e3 if "stats" in result else None


def _err(value_us: float, ref_us: float | None) -> str:
    return "" if ref_us is None else f" ({100 * (value_us - ref_us) / ref_us:+.1f}%)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="timing_fidelity.json")
    parser.add_argument("--ncu-target", choices=sorted(CASES))
    parser.add_argument("--cases", help="comma-separated subset of the cases (default: all)")
    parser.add_argument("--no-ncu", action="store_true")
    opts = parser.parse_args()
    if opts.ncu_target:
        ncu_target(opts.ncu_target)
        return
    dev = torch.device("cuda", 0)
    report: dict[str, Any] = {
        "device": torch.cuda.get_device_name(dev),
        "torch": torch.__version__,
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "cases": {},
        "ncu_logs": {},
    }
    names = opts.cases.split(",") if opts.cases else list(CASES)
    for name in names:
        if name not in CASES:
            parser.error(f"--cases: unknown case {name!r} (known: {', '.join(CASES)})")
    for name in names:
        ncu = None if opts.no_ncu else run_ncu(name, report["ncu_logs"])
        report["cases"][name] = {"ncu": ncu, "methods": time_case(name, dev)}
        _save(report, opts.out)
    report["overhead_ms"], report["extras"], report["diagnostics"] = {}, {}, {}
    try:
        report["overhead_ms"] = overhead(dev)
        report["extras"] = extras(dev)
        report["diagnostics"] = diagnostics(dev, names, opts.no_ncu, report["ncu_logs"])
    except Exception as exc:
        report["error"] = f"{type(exc).__name__}: {exc}"
        print(report["error"])
    _save(report, opts.out)

    print_table(report)


def print_table(report: dict[str, Any]) -> None:
    """Warnings first, then the table last, so the end of the output holds the numbers."""
    for name, case in report["cases"].items():
        for label, r in case["methods"].items():
            for w in dict.fromkeys(r.get("warnings", []) + ([r["error"]] if "error" in r else [])):
                print(f"  [{name} / {label}] {w[:300]}")
    print(f"\n{report['device']}  torch {report['torch']}  cold L2, {NUM_ITERS} iterations; per-call us")
    print(f"{'case':24}{'ncu':>9}" + "".join(f"{label:>22}" for label, _, _ in METHODS))
    for name, case in report["cases"].items():
        ref = case["ncu"]["per_call_us"] if case["ncu"] else None
        cells = []
        for label, _, _ in METHODS:
            r = case["methods"][label]
            us = _median_us(r)
            if us is None:
                cells.append("error")
                continue
            tag = "" if r["method"] == ("cupti" if "cupti" in label else "cuda_events") else "!"
            tag += "" if r["cuda_graph"] == ("graph" in label) else "~"
            cells.append(f"{us:.1f}{_err(us, ref)}{tag}")
        print(f"{name:24}{(f'{ref:.1f}' if ref else '-'):>9}" + "".join(f"{c:>22}" for c in cells))
    print("(! = method fell back, ~ = graph capture failed and it timed without a graph)")
    for name in (*SINGLE_KERNEL, *HOST_LATE):
        case = report["cases"].get(name)
        us = None if case is None else _median_us(case["methods"]["cupti"])
        if case and case["ncu"] and us is not None:
            err = 100 * (us - case["ncu"]["per_call_us"]) / case["ncu"]["per_call_us"]
            kernels = case["ncu"].get("kernels_per_call", "?")
            estimated = [w for w in case["methods"]["cupti"].get("warnings", []) if "launch processing" in w]
            note = " (gaps estimated)" if estimated else ""
            print(f"CUPTI vs ncu {name} ({kernels} kernel/call): {err:+.2f}% -> "
                  f"{'PASS' if abs(err) <= 3 else 'FAIL'} (3% target){note}")
    side = report["cases"].get("side_stream_matmul", {}).get("methods")
    matmul = report["cases"].get("matmul_bf16_4096", {}).get("methods")
    side_us, events_us = (_median_us(side["cupti"]), _median_us(side["events"])) if side else (None, None)
    mm_us = _median_us(matmul["cupti"]) if matmul else None
    if side_us is not None and mm_us is not None:
        verdict = "counted" if side_us >= 0.95 * mm_us else "NOT counted"
        print(
            f"side stream: cupti {side_us:.1f} us vs matmul alone {mm_us:.1f} us -> {verdict}; events saw {events_us if events_us is None else round(events_us, 1)} us"
        )
    for name, row in report["diagnostics"].items():
        ncu_none = row["ncu_no_cache_control"]["per_call_us"] if row["ncu_no_cache_control"] else None
        ref = report["cases"][name]["ncu"]
        ref_us = ref["per_call_us"] if ref else None
        cupti_us = _median_us(report["cases"][name]["methods"]["cupti"])
        print(
            f"diag {name}: ncu(cache none) {ncu_none if ncu_none is None else round(ncu_none, 2)} us, against which "
            f"cupti {cupti_us:.2f}{_err(cupti_us, ncu_none)}; "
            f"cupti warm {_median_us(row['cupti_warm']):.2f}{_err(_median_us(row['cupti_warm']), ref_us)}; "
            f"cupti write-only flush {_median_us(row['cupti_flush_write_only']):.2f}"
            f"{_err(_median_us(row['cupti_flush_write_only']), ref_us)}"
        )
    overheads = ", ".join(f"{k} {v:.2f}" for k, v in report["overhead_ms"].items())
    print(f"harness overhead per worker-style call (ms): {overheads}")
    for key, res in report["extras"].items():
        st = res["stats"]
        print(
            f"{key}: median {st['median_ms'] * 1e3:.1f} us, n={st['n']}, policy {res['cache_policy']}, "
            f"clocks {res['clocks_before']}->{res['clocks_after']}, warnings {res['warnings']}"
        )


if __name__ == "__main__":
    main()
