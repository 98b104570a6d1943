"""Imported once in the worker server, before any worker is forked from it.

Triton decides at import whether its own library functions run interpreted (TRITON_INTERPRET), so it is
imported here only when workers will compile Triton for a GPU; CPU workers import it after setting that.
The GPU check goes through NVML, which leaves no CUDA state behind to break the forks.
"""

import os
import sys

os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
# A judge and its worker take turns, each waiting on the other between calls. With OpenMP's default policy,
# the threads of a CPU op (a copy, a comparison) keep spinning after it, on the cores the other process then
# needs: on the H100 machines that tripled an evaluation's cost (benchmarks/timed_call_costs.py,
# docs/measurements.md). Read by the OpenMP runtime when torch loads it, so set before the import below.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch  # noqa: E402

import flashinfer_bench.bench.evaluators  # noqa: E402, F401
import flashinfer_bench.bench.judge.main  # noqa: E402, F401
import flashinfer_bench.bench.worker.main  # noqa: E402, F401
import flashinfer_bench.compile  # noqa: E402, F401
import flashinfer_bench.timing  # noqa: E402, F401


def hash_triton_once() -> None:
    """Triton hashes its own sources and library (about 0.3 s) the first time a process compiles or loads a
    kernel; done once here, every worker inherits it, instead of every worker of a Triton solution paying it."""
    import importlib

    for module in ("triton.runtime.cache", "triton.compiler.compiler"):  # where it lives depends on the version
        triton_key = getattr(importlib.import_module(module), "triton_key", None)
        if triton_key is not None:
            triton_key()
            return


def import_once(*modules: str) -> None:
    """Import what every GPU worker imports later anyway, if it is installed: done here once, instead of in each
    new worker (a spare's start-up, or a Triton solution's first item). Nothing of it touches the device."""
    import importlib

    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError:
            continue


# What the timer's statistics import on first use (numpy's percentile imports numpy.ma: 0.19 s a worker on an
# H100 host whose packages are not byte-compiled, benchmarks/dataset_profile.py).
import_once("numpy.ma")

if torch.cuda.is_available():
    # CUPTI's Python package, loaded as the timer loads it (about 0.2-0.5 s with its ELF and library helpers),
    # and what Triton imports lazily on a process's first kernel launch (its compiler and, in recent versions,
    # Gluon's language modules).
    from flashinfer_bench.timing.cupti_timer import load_cupti

    load_cupti()
    import_once("triton.language", "triton.compiler.compiler", "triton.experimental.gluon.language")
    if "triton.language" in sys.modules:
        hash_triton_once()
