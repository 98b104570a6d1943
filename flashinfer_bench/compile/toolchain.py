"""Find the native tools that C++/CUDA builds need: nvcc and ninja."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

from flashinfer_bench.compile.errors import BuildError

CPP_SUFFIXES = frozenset({".cpp", ".cc", ".cxx", ".c"})
CUDA_SUFFIXES = frozenset({".cu"})
_DIAGNOSTIC = re.compile(r"\berror\b\s*:", re.IGNORECASE)
"""gcc/clang "f.cpp:3:5: error: ...", nvcc "f.cu(3): error: ...", "collect2: error: ld returned ..."."""


def find_nvcc() -> Path | None:
    """nvcc the way torch's cpp_extension finds CUDA: $CUDA_HOME/$CUDA_PATH, then PATH, then /usr/local/cuda."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home:
        candidate = Path(home) / "bin" / "nvcc"
        return candidate if candidate.is_file() else None
    on_path = shutil.which("nvcc")
    if on_path:
        return Path(on_path)
    default = Path("/usr/local/cuda/bin/nvcc")
    return default if default.is_file() else None


def require_nvcc() -> Path:
    nvcc = find_nvcc()
    if nvcc is None:
        home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
        where = f"$CUDA_HOME/bin ({home})" if home else "PATH or /usr/local/cuda/bin"
        raise BuildError(
            f"CUDA sources need the nvcc compiler, which was not found in {where}; "
            "install the CUDA toolkit or set CUDA_HOME"
        )
    return nvcc


def ensure_ninja_on_path() -> None:
    """torch's cpp_extension runs ``ninja`` from PATH; a venv's ninja is not there unless activated."""
    if shutil.which("ninja"):
        return
    candidates = [Path(sys.executable).parent]
    try:
        import ninja

        candidates.append(Path(ninja.BIN_DIR))
    except ImportError:
        pass
    for directory in candidates:
        if (directory / "ninja").is_file():
            os.environ["PATH"] = f"{directory}{os.pathsep}{os.environ.get('PATH', '')}"
            return
    raise BuildError("building C++/CUDA extensions needs ninja, which was not found: pip install ninja")


def split_sources(directory: Path, paths: list[str]) -> tuple[list[Path], list[Path]]:
    """The C/C++ and the CUDA translation units among a solution's files (headers are only included)."""
    cpp = [directory / p for p in paths if Path(p).suffix in CPP_SUFFIXES]
    cuda = [directory / p for p in paths if Path(p).suffix in CUDA_SUFFIXES]
    return cpp, cuda


def first_error_line(compiler_output: str) -> str:
    """The compiler's first diagnostic that says "error:", for a one-line BuildError message."""
    for line in compiler_output.splitlines():
        if _DIAGNOSTIC.search(line):
            return line.strip()[:500]
    lines = [line.strip() for line in compiler_output.splitlines() if line.strip()]
    return lines[-1][:500] if lines else "no compiler output"
