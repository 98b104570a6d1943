"""Python (and TileLang) solutions: import the entry file from the solution's folder."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from flashinfer_bench.compile.cache import solution_key
from flashinfer_bench.compile.context import BuildContext
from flashinfer_bench.compile.errors import BuildError
from flashinfer_bench.compile.loader import import_solution_entry
from flashinfer_bench.compile.runnable import Runnable
from flashinfer_bench.data import Solution

#: A top-level function of this name in the entry file is the solution's setup (see Runnable.setup).
SETUP_FUNCTION = "setup"


def build_python(solution: Solution, context: BuildContext) -> Runnable:
    directory, existed = context.sources(solution)
    return load_python_entry(solution, context, directory, existed)


def load_python_entry(solution: Solution, context: BuildContext, directory: Path, existed: bool) -> Runnable:
    """Import the entry function of the solution whose sources are in ``directory``."""
    package = f"fib_{solution.spec.language.value}_{solution_key(solution)}"
    with _no_bytecode_unless(context.writes(directory)):
        module, imported_before = import_solution_entry(package, directory, solution.entry_file)
    fn = getattr(module, solution.entry_function, None)
    if not callable(fn):
        raise BuildError(
            f"{solution.entry_file} defines no function '{solution.entry_function}' "
            f"(spec.entry_point is {solution.spec.entry_point!r})"
        )
    setup = getattr(module, SETUP_FUNCTION, None)
    if setup is not None and not callable(setup):
        raise BuildError(f"{solution.entry_file} defines '{SETUP_FUNCTION}', but it is not a function")
    return Runnable(
        fn=fn,
        destination_passing_style=solution.spec.destination_passing_style,
        cached=existed or imported_before,
        source_dir=directory,
        setup=setup,
    )


@contextmanager
def _no_bytecode_unless(writable: bool) -> Iterator[None]:
    """Importing from a folder this process must not write (an entry of a read-only cache root) would write
    ``__pycache__`` into it wherever the file system allows: turn bytecode writing off for that import."""
    before = sys.dont_write_bytecode
    sys.dont_write_bytecode = before or not writable
    try:
        yield
    finally:
        sys.dont_write_bytecode = before
