"""C++/CUDA solutions with binding "tvm-ffi" (or none, as upstream): a library built and loaded by apache-tvm-ffi.

The sources export the entry function with ``TVM_FFI_DLL_EXPORT_TYPED_FUNC(<name>, <function>)``;
the builder returns the module's function of the entry point's name. It takes tensors through
DLPack, so torch tensors can be passed directly.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

from flashinfer_bench.compile.builders.native import NativeSources, build_native
from flashinfer_bench.compile.context import BuildContext
from flashinfer_bench.compile.errors import BuildError, bound_log
from flashinfer_bench.compile.runnable import Runnable
from flashinfer_bench.compile.toolchain import ensure_ninja_on_path, first_error_line, require_nvcc
from flashinfer_bench.data import Solution

BUILD_SUBDIR = ".tvm_ffi"


def build_tvm_ffi(solution: Solution, context: BuildContext) -> Runnable:
    tvm_ffi = _import_tvm_ffi()

    def compile_library(sources: NativeSources) -> Path:
        if sources.cuda:
            require_nvcc()
        ensure_ninja_on_path()
        sources.build_dir.mkdir(parents=True, exist_ok=True)
        try:
            library = tvm_ffi.cpp.build(
                name=sources.name,
                cpp_files=[str(path) for path in sources.cpp] or None,
                cuda_files=[str(path) for path in sources.cuda] or None,
                extra_include_paths=[str(sources.directory)],
                build_directory=str(sources.build_dir),
            )
        except Exception as exc:
            output = str(exc)
            raise BuildError(
                f"compilation failed: {first_error_line(output)}", log=bound_log(output)
            ) from exc
        return Path(library)

    def load_library(path: Path, name: str) -> Any:
        try:
            return tvm_ffi.load_module(str(path))
        except Exception as exc:
            raise BuildError(f"loading the built library {path} failed: {exc}") from exc

    build = build_native(solution, context, BUILD_SUBDIR, compile_library, load_library)
    return build.runnable(solution, f"TVM_FFI_DLL_EXPORT_TYPED_FUNC({solution.entry_function}, <your function>)")


def _import_tvm_ffi() -> ModuleType:
    try:
        import tvm_ffi
        import tvm_ffi.cpp
    except ImportError as exc:
        raise BuildError(
            "binding 'tvm-ffi' needs apache-tvm-ffi, which is not installed: pip install apache-tvm-ffi "
            "(or pip install 'flashinfer-bench[tvm]')"
        ) from exc
    return tvm_ffi
