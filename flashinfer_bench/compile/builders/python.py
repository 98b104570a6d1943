"""Python (and TileLang) solutions: import the entry file from the cache folder."""

from __future__ import annotations

from flashinfer_bench.compile.cache import materialize_sources, solution_key
from flashinfer_bench.compile.context import BuildContext
from flashinfer_bench.compile.errors import BuildError
from flashinfer_bench.compile.loader import import_solution_entry
from flashinfer_bench.compile.runnable import Runnable
from flashinfer_bench.data import Solution


def build_python(solution: Solution, context: BuildContext) -> Runnable:
    directory, existed = materialize_sources(solution, context.cache_root)
    package = f"fib_{solution.spec.language.value}_{solution_key(solution)}"
    module, imported_before = import_solution_entry(package, directory, solution.entry_file)
    fn = getattr(module, solution.entry_function, None)
    if not callable(fn):
        raise BuildError(
            f"{solution.entry_file} defines no function '{solution.entry_function}' "
            f"(spec.entry_point is {solution.spec.entry_point!r})"
        )
    return Runnable(
        fn=fn,
        destination_passing_style=solution.spec.destination_passing_style,
        cached=existed or imported_before,
        source_dir=directory,
    )
