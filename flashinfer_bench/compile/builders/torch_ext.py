"""C++/CUDA solutions with binding "torch": a torch extension built by ``torch.utils.cpp_extension``.

The sources define ``PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)`` and export the entry function under
the name that ``spec.entry_point`` gives; the builder compiles every .cpp/.cc/.cxx/.c/.cu file
(with the solution folder on the include path) and returns that attribute of the module.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

from flashinfer_bench.compile.builders.native import NativeSources, build_native
from flashinfer_bench.compile.context import BuildContext
from flashinfer_bench.compile.errors import BuildError, bound_log
from flashinfer_bench.compile.loader import import_module_from_file
from flashinfer_bench.compile.runnable import Runnable
from flashinfer_bench.compile.toolchain import ensure_ninja_on_path, first_error_line, require_nvcc
from flashinfer_bench.data import Language, Solution

BUILD_SUBDIR = ".torch_ext"


def build_torch_extension(solution: Solution, context: BuildContext) -> Runnable:
    with_cuda = solution.spec.language == Language.CUDA or any(
        source.path.endswith(".cu") for source in solution.sources
    )
    if with_cuda:
        _require_cuda_toolchain()

    def compile_extension(sources: NativeSources) -> Path:
        ensure_ninja_on_path()
        import torch.utils.cpp_extension as cpp_extension

        sources.build_dir.mkdir(parents=True, exist_ok=True)
        # torch's own lock file; stale if a builder was killed mid-build, and we hold the real lock.
        (sources.build_dir / "lock").unlink(missing_ok=True)
        try:
            module = cpp_extension.load(
                name=sources.name,
                sources=[str(path) for path in (*sources.cpp, *sources.cuda)],
                extra_include_paths=[str(sources.directory)],
                build_directory=str(sources.build_dir),
                with_cuda=with_cuda,
                verbose=False,
            )
        except Exception as exc:
            output = str(exc)
            raise BuildError(
                f"compilation failed: {first_error_line(output)}", log=bound_log(output)
            ) from exc
        sys.modules[sources.name] = module
        return Path(module.__file__)

    build = build_native(solution, context, BUILD_SUBDIR, compile_extension, _load_extension)
    return build.runnable(
        solution, f'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {{ m.def("{solution.entry_function}", ...); }}'
    )


def _load_extension(path: Path, name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    import torch  # noqa: F401  (the extension links against libtorch, which must be loaded first)

    try:
        return import_module_from_file(name, path)
    except ImportError as exc:
        raise BuildError(f"loading the built extension {path} failed: {exc}") from exc


def _require_cuda_toolchain() -> None:
    require_nvcc()
    import torch

    if torch.version.cuda is None:
        raise BuildError(
            f"CUDA sources need a CUDA build of torch; this torch ({torch.__version__}) is CPU-only"
        )
