"""Check that the Python packages a solution names in ``spec.dependencies`` are installed."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re

from flashinfer_bench.compile.errors import BuildError

TOOLCHAINS = frozenset(
    {
        "cuda",
        "cuda-toolkit",
        "nvcc",
        "cutlass",
        "cute",
        "cublas",
        "cublaslt",
        "cudnn",
        "cub",
        "thrust",
        "cccl",
        "nccl",
    }
)
"""Names that published solutions list as dependencies but that are not Python packages (e.g.
"CUDA >= 12.0"); they are not checked here (the CUDA builders look for nvcc themselves)."""

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def dependency_name(requirement: str) -> str:
    """The package name of a requirement such as ``"triton >= 3.0"`` or ``"numpy==1.26"``."""
    match = _NAME.match(requirement)
    if match is None:
        raise BuildError(f"cannot read a package name from dependency {requirement!r}")
    return match.group(1)


def is_installed(name: str) -> bool:
    """True when ``name`` is an installed distribution or an importable top-level module."""
    try:
        importlib.metadata.distribution(name)
        return True
    except importlib.metadata.PackageNotFoundError:
        pass
    try:
        return importlib.util.find_spec(name.replace("-", "_")) is not None
    except (ImportError, ValueError):
        return False


def check_dependencies(requirements: list[str]) -> None:
    """Raise BuildError naming every listed Python package that is not installed.

    Only names are checked; version constraints are informational.
    """
    missing = []
    for requirement in requirements:
        name = dependency_name(requirement)
        if name.lower() not in TOOLCHAINS and not is_installed(name):
            missing.append(name)
    if missing:
        raise BuildError(
            f"missing dependencies: {', '.join(missing)} (listed in spec.dependencies, not installed here; "
            f"pip install {' '.join(missing)})"
        )
