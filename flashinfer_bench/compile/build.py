"""Build a solution, or load a definition's reference, into something callable."""

from __future__ import annotations

import hashlib
import linecache
import os
import sys
import traceback
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flashinfer_bench.compile.cache import resolve_cache_root
from flashinfer_bench.compile.context import BuildContext
from flashinfer_bench.compile.dependencies import check_dependencies
from flashinfer_bench.compile.errors import BuildError, bound_log
from flashinfer_bench.compile.registry import find_builder
from flashinfer_bench.compile.runnable import Runnable
from flashinfer_bench.data import Definition, Solution


def build_solution(
    solution: Solution,
    device: str = "cpu",
    cache_dir: str | os.PathLike[str] | None = None,
    scratch_dir: str | os.PathLike[str] | None = None,
) -> Runnable:
    """Build (or fetch from the build cache) a solution for ``device``; raises BuildError.

    With ``scratch_dir`` (a writable directory private to this process) the cache root is never written: a
    verified cache entry is used as it is, anything else is built under ``scratch_dir`` in the cache's layout,
    for a trusted process to promote into the cache once this one has exited (``cache.promote_entry``)."""
    check_dependencies(solution.spec.dependencies)
    builder = find_builder(solution.spec)
    scratch_root = None if scratch_dir is None else Path(scratch_dir).expanduser().resolve()
    context = BuildContext(device=device, cache_root=resolve_cache_root(cache_dir), scratch_root=scratch_root)
    return builder(solution, context)


def build_reference(definition: Definition) -> Callable[..., Any]:
    """The entry point of a definition's reference source (``run``, or FlashInfer's ``<op>_reference``: see
    ``data.entry_points``); raises BuildError if there is no reference or it does not import.

    The source is registered with ``linecache`` under a readable file name, so tracebacks through
    the reference show its lines without writing it to disk.
    """
    source = definition.reference
    if source is None:
        raise BuildError(f"the definition {definition.name} has no reference (FlashInfer wrote it without one: "
                         "its template for this API has none), so nothing can be checked against it")
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    module_name = f"fib_reference_{digest}"
    module = sys.modules.get(module_name)
    if module is None:
        filename = f"<reference of {definition.name}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
        module = types.ModuleType(module_name)
        module.__file__ = filename
        sys.modules[module_name] = module
        try:
            exec(compile(source, filename, "exec"), module.__dict__)
        except (Exception, SystemExit) as exc:
            del sys.modules[module_name]
            raise BuildError(
                f"the reference of {definition.name} failed to import: {type(exc).__name__}: {exc}",
                log=bound_log(traceback.format_exc()),
            ) from exc
    entry = definition.reference_entry
    run = getattr(module, entry, None) if entry is not None else None
    if not callable(run):
        raise BuildError(f"the reference of {definition.name} defines no callable {entry}")
    return run
