"""Imported once in the worker server, before any worker is forked from it.

Triton decides at import whether its own library functions run interpreted (TRITON_INTERPRET), so it is
imported here only when workers will compile Triton for a GPU; CPU workers import it after setting that.
The GPU check goes through NVML, which leaves no CUDA state behind to break the forks.
"""

import os

os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")

import torch  # noqa: E402

import flashinfer_bench.bench.evaluators  # noqa: E402, F401
import flashinfer_bench.bench.runner.judge  # noqa: E402, F401
import flashinfer_bench.bench.runner.worker  # noqa: E402, F401
import flashinfer_bench.compile  # noqa: E402, F401
import flashinfer_bench.timing  # noqa: E402, F401

if torch.cuda.is_available():
    try:
        import triton.language  # noqa: F401
    except ImportError:
        pass
