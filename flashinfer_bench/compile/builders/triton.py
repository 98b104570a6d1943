"""Triton solutions: Python sources whose kernels Triton compiles at their first launch.

On the CPU the kernels run through Triton's interpreter, which ``TRITON_INTERPRET=1`` selects when
a ``@triton.jit`` function is defined; this builder sets it before importing the solution in case
the worker has not. Names missing from ``triton.language`` are reported here; other compile errors
surface at the first launch (see ``is_compile_error``).

Triton's kernel cache is the solution's own: ``<entry this process writes>/.triton``, so no solution
can plant compiled kernels (or the launcher libraries Triton compiles and loads) that another one
runs. An entry read from the cache root lends its ``.triton`` as a starting point (copied, never
written). Triton 3.x reads ``TRITON_CACHE_DIR`` each time it opens its cache unless
``triton.knobs.cache.dir`` was assigned, which then wins: both are set.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

from flashinfer_bench.compile.builders.python import load_python_entry
from flashinfer_bench.compile.context import BuildContext
from flashinfer_bench.compile.errors import BuildError
from flashinfer_bench.compile.runnable import Runnable
from flashinfer_bench.compile.triton_names import undefined_language_names
from flashinfer_bench.data import Solution

TRITON_CACHE_SUBDIR = ".triton"


def build_triton(solution: Solution, context: BuildContext) -> Runnable:
    if importlib.util.find_spec("triton") is None:
        raise BuildError("triton solutions need triton: pip install triton (or the 'triton' extra)")
    if context.on_cpu:
        os.environ["TRITON_INTERPRET"] = "1"
    import triton.language

    missing = [
        name
        for source in solution.sources
        if source.path.endswith(".py")
        for name in undefined_language_names(source.path, source.content, triton.language)
    ]
    if missing:
        raise BuildError("triton.language has no " + ", ".join(missing), log="\n".join(missing))
    directory, existed = context.sources(solution)
    use_triton_cache_dir(_kernel_cache_dir(solution, context, directory))  # before the import: it may launch
    return load_python_entry(solution, context, directory, existed)


def _kernel_cache_dir(solution: Solution, context: BuildContext, directory: Path) -> Path:
    """``.triton`` in the entry this process writes; seeded from the one in ``directory`` (the entry read)."""
    _, written = context.entry_dirs(solution)
    kernels = written / TRITON_CACHE_SUBDIR
    seed = directory / TRITON_CACHE_SUBDIR
    if not context.writes(directory) and seed.is_dir() and not os.path.lexists(kernels):
        written.mkdir(parents=True, exist_ok=True)
        shutil.copytree(seed, kernels, symlinks=True)
    return kernels


def use_triton_cache_dir(path: Path) -> None:
    """Make this process's Triton read and write its kernel cache in ``path``."""
    os.environ["TRITON_CACHE_DIR"] = str(path)
    import triton

    knobs = getattr(triton, "knobs", None)  # triton >= 3.4; older versions read the variable alone
    if knobs is not None:
        knobs.cache.dir = str(path)
