"""The build-once-then-load logic that C++/CUDA builders share.

A build runs under a cross-process lock in ``<solution folder>/<build subdir>/``. When it succeeds
the library's path is recorded next to it; later builds of the same content, in this or any
process, load that library without running a compiler.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flashinfer_bench.compile.cache import (
    exclusive_lock,
    materialize_sources,
    read_artifact,
    record_artifact,
    solution_key,
)
from flashinfer_bench.compile.context import BuildContext
from flashinfer_bench.compile.errors import BuildError
from flashinfer_bench.compile.runnable import Runnable
from flashinfer_bench.compile.toolchain import split_sources
from flashinfer_bench.data import Solution


@dataclass(frozen=True)
class NativeSources:
    directory: Path
    """The solution's cache folder; also an include directory."""
    build_dir: Path
    name: str
    """Library/module name, unique per solution content."""
    cpp: list[Path]
    cuda: list[Path]


@dataclass(frozen=True)
class NativeBuild:
    library: Any
    cached: bool
    log: str
    directory: Path

    def runnable(self, solution: Solution, how_to_export: str) -> Runnable:
        """The solution's entry function from the built library; ``how_to_export`` says how, if it is missing."""
        fn = getattr(self.library, solution.entry_function, None)
        if not callable(fn):
            raise BuildError(
                f"the built library exports no function '{solution.entry_function}': export it with {how_to_export}"
            )
        return Runnable(
            fn=fn,
            destination_passing_style=solution.spec.destination_passing_style,
            cached=self.cached,
            build_log=self.log,
            source_dir=self.directory,
        )


def library_name(solution: Solution) -> str:
    """The built library's (and module's) name, unique per solution content; also its marker's name."""
    return f"fib_{solution.spec.language.value}_{solution_key(solution)}"


Compile = Callable[[NativeSources], Path]
"""Compile the sources, returning the built library's path; raise BuildError on failure."""
Load = Callable[[Path, str], Any]
"""Load a built library (path, name)."""


def build_native(
    solution: Solution, context: BuildContext, build_subdir: str, compile_sources: Compile, load: Load
) -> NativeBuild:
    """Load the library built earlier for the same content, else build it in the entry this process writes."""
    name = library_name(solution)
    directory, _ = context.sources(solution)
    artifact = read_artifact(directory / build_subdir, name)
    if artifact is not None:
        return NativeBuild(load(artifact, name), cached=True, log="", directory=directory)
    if not context.writes(directory):  # a verified entry of a read-only cache root, without a build
        directory, _ = materialize_sources(solution, context.write_root)
    cpp, cuda = split_sources(directory, [source.path for source in solution.sources])
    if not cpp and not cuda:
        raise BuildError(
            f"no C/C++ (.cpp .cc .cxx .c) or CUDA (.cu) files among sources {[s.path for s in solution.sources]}"
        )
    sources = NativeSources(directory, directory / build_subdir, name, cpp, cuda)
    with exclusive_lock(sources.build_dir / "build.flock"):
        artifact = read_artifact(sources.build_dir, name)
        if artifact is not None:
            return NativeBuild(load(artifact, name), cached=True, log="", directory=directory)
        started = time.perf_counter()
        artifact = compile_sources(sources)
        library = load(artifact, name)
        record_artifact(sources.build_dir, name, artifact)
    seconds = time.perf_counter() - started
    log = f"compiled {len(cpp) + len(cuda)} source file(s) in {seconds:.1f} s into {artifact}"
    return NativeBuild(library, cached=False, log=log, directory=directory)
