"""What every runner process does to its device and to itself: create the device's context up front, check it
is still usable, describe the environment, and die with its parent."""

from __future__ import annotations

import contextlib
import os
import platform
import sys
from collections.abc import Iterator
from importlib import metadata
from typing import Any

#: When set, judge and worker processes run under cProfile and write ``<role>-<pid>-<ns>.prof`` there when they
#: stop, workers also after each timing session (a diagnostic for benchmarks/harness_overhead.py --profile and
#: benchmarks/dataset_profile.py).
PROFILE_DIR_ENV = "FLASHINFER_BENCH_PROFILE_DIR"

#: prctl(2) options: the signal this process gets when its parent exits; whether it can be ptraced or dumped.
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4


def describe_environment(device: str) -> dict[str, Any]:
    import torch

    import flashinfer_bench

    # str(): torch.__version__ is a TorchVersion, whose unpickling imports torch in whoever receives the environment
    # (a Ray device host that never needs torch took seconds to return it).
    libs = {"torch": str(torch.__version__), "flashinfer_bench": flashinfer_bench.__version__,
            "python": platform.python_version()}
    for name in ("triton", "flashinfer-python", "cupti-python"):
        try:
            libs[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    if torch.version.cuda:
        libs["cuda"] = torch.version.cuda
    hardware = torch.cuda.get_device_name(torch.device(device)) if device.startswith("cuda") else "cpu"
    return {"hardware": hardware, "libs": libs}


def prepare_device(device: str) -> None:
    """Make the device current and create its context (and CUPTI's) now, so an item is not charged for them."""
    if device == "cpu":
        # Triton kernels run through Triton's interpreter on the CPU; it reads this before a kernel is defined.
        os.environ["TRITON_INTERPRET"] = "1"
        return
    import torch

    from flashinfer_bench.testing import bench_gpu_time
    from flashinfer_bench.timing.cupti_timer import load_cupti

    torch.cuda.set_device(torch.device(device))
    # torch's own set-up on first use (with torch 2.11, registering its Triton sparse kernels: 0.14 s a worker on
    # an H100 host, benchmarks/dataset_profile.py), which the context created below does not run, and a new
    # worker's first call would.
    torch.cuda.init()
    scratch = torch.zeros(1, device=device)
    warm_harness_kernels(device)
    torch.cuda.synchronize()
    if load_cupti() is not None:
        # Sets up CUPTI's activity tracing here, while a spare worker waits, not during its first item.
        bench_gpu_time(scratch.add_, args=(1,), num_iters=1, dry_run_iters=0, device=device)


def warm_harness_kernels(device: str) -> None:
    """Run once the kernels every evaluation launches (drawing inputs, copying them, comparing their bytes to
    find the inputs a call wrote into, filling and copying outputs, gathering a replayed round's picked outputs):
    CUDA loads a kernel's module on its first launch, which would otherwise land in a new worker's first item (the
    byte comparison's alone: 43-54 ms on an H100; the gather's, bench/replay.py ``ReplayedCalls.shipped``, 43-57
    ms)."""
    import torch

    from flashinfer_bench.bench.calling import clone_inputs, modified_inputs

    generator = torch.Generator(device=device)
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        drawn = torch.randn(16, dtype=dtype, device=device, generator=generator)
        modified_inputs(["drawn"], [drawn], clone_inputs([drawn]))
        drawn.zero_()
        drawn.to(torch.float8_e4m3fn)
    for dtype in (torch.int32, torch.int64):
        torch.randint(0, 64, (16,), dtype=dtype, device=device, generator=generator)
    rows = torch.zeros((2, 8), dtype=torch.uint8, device=device).index_select(0, torch.tensor([1, 0]).to(device))
    torch.empty(16, dtype=torch.uint8, pin_memory=True).copy_(rows.view(-1))


def device_is_healthy(device: str) -> bool:
    if device == "cpu":
        return True
    import torch

    try:
        torch.cuda.synchronize()
        torch.zeros(1, device=device).add_(1).item()
        return True
    except Exception:  # noqa: BLE001 - any failure here means the context is gone
        return False


def leave_interrupts_to_the_parent() -> None:
    """Ignore SIGINT. Ctrl-C reaches every process of the terminal's foreground group, judges included; a judge
    that died of it would look to the parent like a judge that failed its item. The parent alone handles the
    interrupt: it stops recording verdicts, then stops its judges and workers (bench/benchmark.py)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def die_with_parent() -> None:
    """On Linux, have the kernel SIGKILL this process when the process that started it exits.

    A judge's parent is the forkserver, which exits when the CLI does, so a judge (or a worker that could not
    be sandboxed) does not outlive a CLI that was killed. Workers get this from the sandbox instead."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent is gone already: the signal was never armed
        os._exit(1)
    release_forkserver()


def release_forkserver() -> None:
    """Let go of the forkserver's liveness pipe.

    The forkserver stays up while any process holds the write end of its "alive" pipe, and it hands that end to
    every process it forks: a hanging process would keep its own parent alive. Runner processes start no
    processes through the forkserver (multiprocessing keeps the fd in a private attribute)."""
    from multiprocessing import forkserver

    server = getattr(forkserver, "_forkserver", None)
    alive = getattr(server, "_forkserver_alive_fd", None)
    if isinstance(alive, int):
        with contextlib.suppress(OSError):
            os.close(alive)
        server._forkserver_alive_fd = None


def make_undumpable() -> None:
    """No process of the same user may read this one's memory or environment (ptrace, /proc/PID/mem), not
    even where a worker could not be put in its own pid namespace: a judge holds the run's secret and the
    reference's outputs."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0)


#: The profile under way in this process and where it goes (``profiled``), for ``profile_checkpoint``.
_profile: tuple[Any, str] | None = None


@contextlib.contextmanager
def profiled(role: str) -> Iterator[None]:
    """cProfile around the body when $FLASHINFER_BENCH_PROFILE_DIR is set (the stats are written on a normal stop,
    and by ``profile_checkpoint``; sandboxed workers may write there too: process_pool.profile_dirs)."""
    global _profile
    directory = os.environ.get(PROFILE_DIR_ENV)
    if not directory:
        yield
        return
    import cProfile
    import time

    profile = cProfile.Profile()
    _profile = profile, os.path.join(directory, f"{role}-{os.getpid()}-{time.monotonic_ns()}.prof")
    profile.enable()
    try:
        yield
    finally:
        profile_checkpoint()
        profile.disable()
        _profile = None


def profile_checkpoint() -> None:
    """Write the profile so far, where one is under way (``profiled``): a retired worker is killed, so it writes
    one after each timing session, or its last item would be missing. Written aside and renamed: a process killed
    while writing leaves the previous one whole."""
    if _profile is None:
        return
    profile, path = _profile
    profile.disable()
    try:
        profile.dump_stats(path + ".partial")
        os.replace(path + ".partial", path)
    finally:
        profile.enable()
