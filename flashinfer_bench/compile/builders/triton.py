"""Triton solutions: Python sources whose kernels Triton compiles at their first launch.

On the CPU the kernels run through Triton's interpreter, which ``TRITON_INTERPRET=1`` selects when
a ``@triton.jit`` function is defined; this builder sets it before importing the solution in case
the worker has not. Names missing from ``triton.language`` are reported here; other compile errors
surface at the first launch (see ``is_compile_error``).
"""

from __future__ import annotations

import importlib.util
import os

from flashinfer_bench.compile.builders.python import build_python
from flashinfer_bench.compile.context import BuildContext
from flashinfer_bench.compile.errors import BuildError
from flashinfer_bench.compile.runnable import Runnable
from flashinfer_bench.compile.triton_names import undefined_language_names
from flashinfer_bench.data import Solution


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
    return build_python(solution, context)
