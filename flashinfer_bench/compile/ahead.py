"""Which solutions are worth building ahead of their turn, and whether the build cache holds their library.

Only C++/CUDA solutions run a compiler when they are built (torch's cpp_extension or TVM-FFI: seconds to
minutes). Python and TileLang solutions are imported, and Triton compiles its kernels at their first launch, on
the device: for them a build ahead of time would do nothing the worker does not do at once.

Run by the parent, which must not trust the cache's contents: the check looks at the marker a finished build
leaves (``cache.record_artifact``) without reading it or following a symlink; the worker that uses the entry
verifies the library's SHA-256 as for any entry, and builds again if it does not match.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from flashinfer_bench.compile.builders import torch_ext, tvm_ffi
from flashinfer_bench.compile.builders.native import library_name
from flashinfer_bench.compile.cache import solution_dir
from flashinfer_bench.compile.errors import BuildError
from flashinfer_bench.compile.registry import find_builder
from flashinfer_bench.data import Solution

#: The builders that run a compiler, and the sub-folder of a cache entry where each puts its library.
COMPILING_BUILDERS = {torch_ext.build_torch_extension: torch_ext.BUILD_SUBDIR,
                      tvm_ffi.build_tvm_ffi: tvm_ffi.BUILD_SUBDIR}


def compiled_subdir(solution: Solution) -> str | None:
    """The build sub-folder of ``solution``'s cache entry when building it runs a compiler; else None (also when
    no builder takes it: its worker reports that)."""
    try:
        builder = find_builder(solution.spec)
    except BuildError:
        return None
    return COMPILING_BUILDERS.get(builder)


def worth_building_ahead(solution: Solution, cache_root: Path) -> bool:
    """Whether building ``solution`` runs a compiler and ``cache_root`` holds no finished build of it."""
    subdir = compiled_subdir(solution)
    if subdir is None:
        return False
    marker = solution_dir(solution, cache_root) / subdir / f"{library_name(solution)}.artifact"
    try:
        return not stat.S_ISREG(os.lstat(marker).st_mode)
    except OSError:
        return True
