"""The tagged output lines of the routine CLI ([INFO], [PERF], [VERBOSE], ...)."""

from __future__ import annotations

import sys


def info(msg: str) -> None:
    print(f"[INFO] {msg}", flush=True)


def warning(msg: str) -> None:
    print(f"[WARNING] {msg}", flush=True)


def error(msg: str) -> None:
    print(f"[ERROR] {msg}", file=sys.stdout, flush=True)


def verbose(level: int, msg: str) -> None:
    """Print ``[VERBOSE]`` at ``-v`` and ``[VVERBOSE]`` at ``-vv``; ``level`` is the needed count."""
    print(f"[{'V' * (level - 1)}VERBOSE] {msg}", flush=True)


def perf_line(backend: str, median_ms: float, std_ms: float, tflops: float, tb_per_sec: float) -> str:
    """FlashInfer's benchmark's [PERF] line: backend left-justified in 10 columns, then ``::``."""
    return (
        f"[PERF] {backend:<10}:: median time {median_ms:.3f} ms; std {std_ms:.3f} ms; "
        f"achieved tflops {tflops:.3f} TFLOPs/sec; achieved tb_per_sec {tb_per_sec:.3f} TB/sec"
    )
