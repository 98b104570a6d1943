"""Import Python modules from files on disk under names that cannot collide between solutions.

A solution's folder becomes a synthetic package (so relative imports work) and is put first on
``sys.path`` (so ``import helper`` finds the solution's own ``helper.py``). Modules of the same
top-level name that another solution's folder supplied earlier in this process are evicted first,
so a long-lived worker never hands one solution another solution's helper.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import traceback
from pathlib import Path, PurePosixPath
from types import ModuleType

from flashinfer_bench.compile.errors import BuildError, bound_log

_solution_dirs: set[Path] = set()
"""Solution folders this process has put on sys.path."""


def import_module_from_file(name: str, path: Path) -> ModuleType:
    """Import the file at ``path`` (Python source or extension module) as module ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path} as a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def import_solution_entry(package: str, directory: Path, entry_file: str) -> tuple[ModuleType, bool]:
    """Import ``entry_file`` of the solution in ``directory`` as a module of package ``package``.

    Returns the module and whether it had already been imported in this process. Any exception the
    import raises (SyntaxError, ImportError, an error in module-level code) becomes a BuildError
    carrying the traceback.
    """
    parts = PurePosixPath(entry_file).with_suffix("").parts
    module_name = ".".join((package, *parts))
    if module_name in sys.modules:
        return sys.modules[module_name], True
    _put_first_on_path(directory)
    if package not in sys.modules:
        spec = importlib.machinery.ModuleSpec(package, None, is_package=True)
        spec.submodule_search_locations = [str(directory)]
        sys.modules[package] = importlib.util.module_from_spec(spec)
    try:
        return import_module_from_file(module_name, directory / entry_file), False
    except (Exception, SystemExit) as exc:
        for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
            del sys.modules[name]
        raise BuildError(
            f"importing {entry_file} failed: {type(exc).__name__}: {exc}",
            log=bound_log(traceback.format_exc()),
        ) from exc


def _put_first_on_path(directory: Path) -> None:
    others = _solution_dirs - {directory}
    for child in directory.iterdir():
        name = child.stem if child.suffix == ".py" else child.name
        module = sys.modules.get(name)
        if module is not None and _defined_under(module, others):
            for stale in [n for n in sys.modules if n == name or n.startswith(name + ".")]:
                del sys.modules[stale]
    entry = str(directory)
    if entry in sys.path:
        sys.path.remove(entry)
    sys.path.insert(0, entry)
    _solution_dirs.add(directory)


def _defined_under(module: ModuleType, directories: set[Path]) -> bool:
    locations = [getattr(module, "__file__", None), *(getattr(module, "__path__", None) or [])]
    for location in locations:
        if location and any(Path(location).is_relative_to(d) for d in directories):
            return True
    return False
