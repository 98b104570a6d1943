"""A builder process: builds one solution ahead of its turn (runner/prebuilder.py), in a worker's sandbox.

Building runs solution code (a compiler on hostile sources, then the library's loading), so a builder gets what a
worker gets: the same view, limits and cgroup, writable only in its own scratch directory, where it builds in the
build cache's layout; the parent moves the entry into the cache once the process has exited. It gets no channel:
it says nothing but its exit status, and the compiler's output goes nowhere (a build that fails is built again by
the solution's worker, whose log shows it). It yields the CPU to the timed session (``BUILDER_NICENESS``, and
fewer compiler jobs than cores) and never times anything.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from flashinfer_bench.bench.process_setup import leave_interrupts_to_the_parent, release_forkserver
from flashinfer_bench.bench.worker.main import worker_build_root, write_into
from flashinfer_bench.bench.worker.sandbox import SandboxError, SandboxPolicy, enter_sandbox

#: Added to the builder's niceness (inherited by the compilers it starts): the timed session goes first.
BUILDER_NICENESS = 10
#: Exit statuses: built; the build failed; the sandbox could not be set up.
BUILT, BUILD_FAILED, NO_SANDBOX = 0, 1, 2


def compiler_jobs() -> int:
    """Parallel compiler jobs of a build ahead (torch's cpp_extension reads ``MAX_JOBS``): half the cores."""
    return max(1, (os.cpu_count() or 2) // 2)


def builder_main(device: str, scratch: Path, policy: SandboxPolicy, solution_json: str) -> None:
    """Process entry point: into the sandbox, keeping no descriptor, then build; the exit status says how it went."""
    leave_interrupts_to_the_parent()
    release_forkserver()
    try:
        enter_sandbox(replace(policy, keep_fds=()))
    except SandboxError:
        os._exit(NO_SANDBOX)
    os.nice(BUILDER_NICENESS)
    os.environ.setdefault("MAX_JOBS", str(compiler_jobs()))
    write_into(scratch)
    from flashinfer_bench.compile import build_solution
    from flashinfer_bench.data import Solution

    root = worker_build_root(scratch)
    try:
        build_solution(Solution.model_validate_json(solution_json), device=device, cache_dir=root, scratch_dir=root)
    except BaseException:  # noqa: BLE001 - solution code may raise anything; the worker's own build reports it
        os._exit(BUILD_FAILED)
    os._exit(BUILT)
