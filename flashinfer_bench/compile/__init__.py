"""Turn solutions into callables: python, triton, C++/CUDA (torch extension or tvm-ffi), with a build cache.

Importing this package imports neither torch nor any solution code; builders import what they
need when they run.
"""

from flashinfer_bench.compile.build import build_reference, build_solution
from flashinfer_bench.compile.cache import CACHE_ENV_VAR, promote_entry, resolve_cache_root
from flashinfer_bench.compile.context import BuildContext
from flashinfer_bench.compile.errors import BuildError, is_compile_error
from flashinfer_bench.compile.registry import ANY_BINDING, Builder, find_builder, register_builder
from flashinfer_bench.compile.runnable import Runnable

__all__ = [
    "ANY_BINDING",
    "CACHE_ENV_VAR",
    "BuildContext",
    "BuildError",
    "Builder",
    "Runnable",
    "build_reference",
    "build_solution",
    "find_builder",
    "is_compile_error",
    "promote_entry",
    "register_builder",
    "resolve_cache_root",
]
