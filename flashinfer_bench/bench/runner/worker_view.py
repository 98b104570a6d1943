"""What a worker is shown and how far it may go: the paths of its file system view (worker/sandbox/view.py) and
its resource limits.

Shown read-only besides the system's directories: Python's installs (``sys.prefix`` and the others) and every
directory on ``sys.path``, except a source checkout that holds this package (an editable install, or a
checkout on PYTHONPATH), of which only the package's own directory is shown (a checkout may hold trace sets,
solutions and results); CUDA's installs; the blob files the run's workloads read (``blob_paths``, all of them from
the run's start: ``DeviceSlot.show_for``), never the trace set's definitions, solutions, workloads or traces; the
compilers' installs outside the system's directories (``toolchain_paths``). The build cache is not shown: the
parent copies the item's own entry into the worker's scratch directory (``compile.cache.stage_entry``).
"""

from __future__ import annotations

import glob
import os
import shutil
import sys
from dataclasses import replace
from pathlib import Path, PurePosixPath

from flashinfer_bench.bench.wire.parent_judge import WorkItem
from flashinfer_bench.bench.worker.sandbox import SandboxPolicy
from flashinfer_bench.bench.worker.sandbox.limits import GIB, ResourceLimits
from flashinfer_bench.bench.worker.sandbox.policy import _at_or_below
from flashinfer_bench.bench.worker.sandbox.view import SYSTEM_PATHS

#: CUDA's usual installs, shown where they exist outside the system's directories; $CUDA_HOME and
#: $CUDA_PATH too.
CUDA_PATTERNS = ("/usr/local/cuda*", "/usr/local/nvidia", "/opt/cuda*", "/opt/nvidia")
CUDA_VARIABLES = ("CUDA_HOME", "CUDA_PATH")
#: The compilers builds call, and the variables that name them.
TOOLCHAIN_PROGRAMS = ("cc", "gcc", "c++", "g++", "ld", "nvcc", "ninja")
TOOLCHAIN_VARIABLES = ("CC", "CXX")
#: Folders of a trace set a blob may not be shown from as a whole (only the one file is).
TRACE_SET_FOLDERS = {"definitions", "solutions", "workloads", "traces"}
PACKAGE_HOMES = {"site-packages", "dist-packages"}


def python_paths() -> tuple[str, ...]:
    """Python's installs and what is on ``sys.path``, less source checkouts (see the module docstring)."""
    import flashinfer_bench

    package = Path(flashinfer_bench.__file__).resolve().parent
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, str(package)}
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        real = Path(entry).resolve()
        if real == package.parent and real.name not in PACKAGE_HOMES:
            continue
        paths.add(str(real))
    return tuple(sorted(paths))


def cuda_paths() -> tuple[str, ...]:
    found = {path for pattern in CUDA_PATTERNS for path in glob.glob(pattern)}
    found |= {os.environ[name] for name in CUDA_VARIABLES if os.path.isdir(os.environ.get(name, ""))}
    return tuple(sorted(found))


def toolchain_paths() -> tuple[str, ...]:
    """The installs of the compilers a build may call (Triton's launcher, torch extensions, tvm-ffi, nvcc), found
    as this process finds them ($CC and $CXX, then PATH) where they live outside the system's directories (a gcc
    in /opt/gcc, say): the folder above their ``bin``."""
    names = [os.environ.get(variable, "") for variable in TOOLCHAIN_VARIABLES] + list(TOOLCHAIN_PROGRAMS)
    found = set()
    for name in filter(None, names):
        program = shutil.which(name.split()[0])
        if program is None:
            continue
        for path in {Path(program).parent, Path(os.path.realpath(program)).parent}:
            home = path.parent if path.name == "bin" else path
            if not any(_at_or_below(str(home), system) for system in SYSTEM_PATHS):
                found.add(str(home))
    return tuple(sorted(found))


def blob_paths(item: WorkItem) -> tuple[str, ...]:
    """What a worker must see to read ``item``'s blobs: for a blob under a folder of its own at the trace set's
    top (``blob/`` as the format has it), that folder; for one elsewhere, the file alone. Paths that are not
    relative or leave the trace set are left out (the worker reports them as the parent's check does)."""
    root = Path(item.trace_set_root or ".").resolve()
    shown = set()
    for spec in item.workload.inputs.values():
        relative = getattr(spec, "path", None)
        if getattr(spec, "type", None) != "safetensors" or not relative:
            continue
        pure = PurePosixPath(relative.replace("\\", "/"))
        if pure.is_absolute() or ".." in pure.parts or len(pure.parts) < 1:
            continue
        whole = len(pure.parts) > 1 and pure.parts[0] not in TRACE_SET_FOLDERS
        path = root / pure.parts[0] if whole else root / pure
        if path.exists():
            shown.add(str(path))
    return tuple(sorted(shown))


def policy_for(policy: SandboxPolicy, item: WorkItem) -> SandboxPolicy:
    """``policy`` for a worker that runs ``item``: the item's blobs shown, and any shown directory that holds
    the item's trace set dropped (a checkout on ``sys.path``, the directory the CLI was started in), so that
    none of its definitions, solutions, workloads or traces is in view. The same object when nothing changes."""
    root = str(Path(item.trace_set_root or ".").resolve())
    kept = tuple(path for path in policy.read_only if not _at_or_below(root, path))
    shown = (*kept, *(path for path in blob_paths(item) if path not in kept))
    return policy if shown == policy.read_only else replace(policy, read_only=shown)


def default_limits() -> ResourceLimits:
    """Limits no honest solution reaches and that keep one worker from taking the machine down: half its
    memory, 4096 processes and threads, 16384 open files, 64 GiB per file; no CPU-time limit (the evaluation's
    timeout bounds a call), no address-space limit (the memory limit covers what it would)."""
    return ResourceLimits(open_files=16384, file_size_bytes=64 * GIB, processes=4096,
                          memory_bytes=_physical_memory() // 2)


def _physical_memory() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
