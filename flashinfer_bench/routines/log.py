"""The tagged output lines of the routine CLI ([INFO], [PERF], [VERBOSE], ...)."""

from __future__ import annotations

import sys


def line(text: str) -> None:
    """One output line in one write: ``print`` writes the text and its newline apart, and a Ctrl-C that came
    between them left the next line (the CLI's "[ERROR] interrupted ...") on the end of this one."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def info(msg: str) -> None:
    line(f"[INFO] {msg}")


def warning(msg: str) -> None:
    line(f"[WARNING] {msg}")


def error(msg: str) -> None:
    line(f"[ERROR] {msg}")


def verbose(level: int, msg: str) -> None:
    """Print ``[VERBOSE]`` at ``-v`` and ``[VVERBOSE]`` at ``-vv``; ``level`` is the needed count."""
    line(f"[{'V' * (level - 1)}VERBOSE] {msg}")


def throughput(value: float | None) -> str:
    """Three decimals as FlashInfer's benchmark prints them; three significant digits below 0.001 (a CPU's
    TFLOPs/sec), so that no measured throughput reads 0.000; ``n/a`` when it was not counted."""
    if value is None:
        return "n/a"
    return f"{value:.3f}" if value == 0 or value >= 0.001 else f"{value:.3g}"


def perf_line(backend: str, median_ms: float, std_ms: float, tflops: float | None, tb_per_sec: float | None) -> str:
    """FlashInfer's benchmark's [PERF] line: backend left-justified in 10 columns, then ``::``."""
    return (
        f"[PERF] {backend:<10}:: median time {median_ms:.3f} ms; std {std_ms:.3f} ms; "
        f"achieved tflops {throughput(tflops)} TFLOPs/sec; achieved tb_per_sec {throughput(tb_per_sec)} TB/sec"
    )
