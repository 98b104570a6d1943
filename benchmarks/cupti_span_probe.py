"""Which CUPTI span matches Nsight Compute's ``gpu__time_duration``, for the single-kernel cases of
timing_fidelity.py (100 samples, median of 3 medians, on the same machine as ncu):

- ``lead-in span``: what bench_gpu_time reports: from the end of the lead-in (the L2 flush, or a spin
  kernel when warm) to the end of the kernel (see flashinfer_bench/timing/cupti_records.py);
- ``kernel record``: the kernel's own start and end in its CONCURRENT_KERNEL record;
- ``serialised record``: the same with the KERNEL record kind, which serialises kernels.

    python benchmarks/cupti_span_probe.py [--ncu-json timing_fidelity.json]

ncu numbers are read from a timing_fidelity.py report when given (same cases), else measured here.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
import timing_fidelity  # noqa: E402

from flashinfer_bench.timing import cupti_timer  # noqa: E402
from flashinfer_bench.timing.lead_in import lead_in_step  # noqa: E402

CASES = ("rms_norm_1x4096", "rms_norm_triton_1x4096", "mul2_64MiB_bf16", "matmul_bf16_4096")
SAMPLES, DRY_RUNS, REPEATS = 100, 10, 3


def medians_us(name: str, dev: torch.device, cold: bool) -> tuple[float, float]:
    """(lead-in span, kernel-record span) medians in us, each the median of REPEATS medians."""
    cupti = cupti_timer.load_cupti()
    fn, args = timing_fidelity.CASES[name](dev)

    prepare = lead_in_step(dev, flush=cold)
    for i in range(DRY_RUNS):
        prepare(i)
        fn(*args)
    torch.cuda.synchronize(dev)
    spans, records = [], []
    for _ in range(REPEATS):
        found = [
            s
            for s in cupti_timer.measure_cupti(cupti, prepare, lambda _: fn(*args), range(SAMPLES), dev)
            if s
        ]
        spans.append(statistics.median(s.duration_ms for s in found) * 1e3)
        records.append(statistics.median(s.activity_ms for s in found) * 1e3)
    return statistics.median(spans), statistics.median(records)


def ncu_us(name: str, report: dict | None) -> float:
    if report is not None:
        ncu = report["cases"][name]["ncu"]
    else:
        ncu = timing_fidelity.run_ncu(name, {})
    return ncu["per_call_us"] if ncu else float("nan")


def pct(value: float, ref: float) -> str:
    return f"{value:8.2f} ({(value / ref - 1) * 100:+5.1f}%)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ncu-json", type=Path, help="a timing_fidelity.py report to take ncu numbers from")
    opts = parser.parse_args()
    report = json.loads(opts.ncu_json.read_text()) if opts.ncu_json else None
    dev = torch.device("cuda", 0)
    session = cupti_timer.session(cupti_timer.load_cupti())
    kinds = session.cupti.ActivityKind
    concurrent = set(session.gpu_kinds)
    serial = concurrent - {int(kinds.CONCURRENT_KERNEL)} | {int(kinds.KERNEL)}
    rows = []
    for name in CASES:
        cold_span, cold_record = medians_us(name, dev, cold=True)
        warm_span, warm_record = medians_us(name, dev, cold=False)
        session.gpu_kinds = serial
        try:
            serial_span, _ = medians_us(name, dev, cold=True)
        finally:
            session.gpu_kinds = concurrent
        rows.append((name, ncu_us(name, report), cold_span, cold_record, serial_span, warm_span, warm_record))
    print(f"\n{torch.cuda.get_device_name(dev)}; us, median of {REPEATS} medians of {SAMPLES}; % vs ncu")
    print(
        f"{'case':<24}{'ncu':>8}{'cold: lead-in span':>22}{'kernel record':>22}{'serialised record':>22}"
        f"{'warm: lead-in span':>20}{'kernel record':>12}"
    )
    for name, ncu, cold_span, cold_record, serial_span, warm_span, warm_record in rows:
        print(
            f"{name:<24}{ncu:8.2f}{pct(cold_span, ncu):>22}{pct(cold_record, ncu):>22}{pct(serial_span, ncu):>22}"
            f"{warm_span:20.2f}{warm_record:12.2f}"
        )


if __name__ == "__main__":
    main()
