"""CUDA graphs: capture several calls of fn once, then time replays (per-call time = replay / calls)."""

from __future__ import annotations

import contextlib
import gc
import warnings
from collections.abc import Iterator, Sequence

import torch

from .steps import Step

# Calls captured per graph with a warm cache: enough to amortize the replay launch.
WARM_CALLS_PER_GRAPH = 10
#: What torch's sync debug mode says of an operation that makes the host wait for the device.
SYNC_MESSAGE = "called a synchronizing CUDA operation"


class GraphCaptureFailed(RuntimeError):
    pass


@contextlib.contextmanager
def collector_off() -> Iterator[None]:
    """Python's garbage collector off inside. A collection runs the finalizers of whatever it frees: where that is a
    reference cycle holding another graph, its memory pool or its events, their release inside a capture (or inside
    the warm-up call before it, whose waits for the device are refused) can fail the capture. On an H100, one of six
    runs of benchmarks/worker_phases.py --reload had an evaluation's capture fail (its calls were then made one at a
    time), and six of six with a change that moved the collections; with the collector off here and the cycle gone
    (bench/replay.py ``ReplayedCalls``), none of four runs of that change (docs/measurements.md, fourteenth
    session). The failure's message was not kept, so this is the likely cause, not a shown one."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@collector_off()
def capture(call: Step, calls: int, device: torch.device,
            generators: Sequence[torch.Generator] = ()) -> torch.cuda.CUDAGraph:
    """A graph of ``call(0) ... call(calls - 1)``, captured on a side stream after one warm-up call there
    (libraries such as cuBLAS set up per-stream state on first use, which must not happen mid-capture).
    ``generators``: device generators besides the default one that the calls draw from; each replay starts them
    where they stand then (seeded before a replay, a generator gives that seed's draws).

    A warm-up call that would wait for the device (``.item()``, a copy to the host) is stopped there, under torch's
    sync debug mode, and not captured at all: the capture would fail, and a failed one cost a worker more than the
    call (under cProfile on an H100, about 7 s beside a 3 s Python reference of the real dataset, in torch's set-up
    and clean-up around it); stopped at its first wait, such a call costs next to nothing. The garbage collector is
    off throughout (``collector_off``): no finalizer of another graph, its memory or its events runs in here."""
    stream = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    graph = torch.cuda.CUDAGraph()
    try:
        for generator in generators:
            graph.register_generator_state(generator)
        with torch.cuda.stream(stream), refused_host_syncs():
            call(0)
        torch.cuda.synchronize(device)
    except Exception as exc:
        if SYNC_MESSAGE not in str(exc):
            raise GraphCaptureFailed(_first_line(exc)) from exc
        torch.cuda.synchronize(device)  # what the call queued before it was stopped
        raise GraphCaptureFailed(f"the call waits for the device ({_first_line(exc)}), which a CUDA graph cannot "
                                 "hold") from exc
    try:
        with capturing(graph, stream):
            for k in range(calls):
                call(k)
        torch.cuda.synchronize(device)
    except Exception as exc:
        _recover(device)
        raise GraphCaptureFailed(_first_line(exc)) from exc
    return graph


@contextlib.contextmanager
def capturing(graph: torch.cuda.CUDAGraph, stream: torch.cuda.Stream) -> Iterator[None]:
    """What ``torch.cuda.graph`` does around a capture, less its emptying of the page-locked host memory's caching
    allocator: after every capture, the judge's page-locked buffers for shipped outputs were allocated again (about
    0.12 s each on an H100 host, several per evaluation; docs/measurements.md). The device's cache is emptied, as
    torch does: a judge that kept a large reference's blocks left its worker too little memory on the device."""
    torch.cuda.synchronize(stream.device)
    torch.cuda.empty_cache()
    with torch.cuda.stream(stream):
        graph.capture_begin(capture_error_mode="global")
        try:
            yield
        except BaseException:
            with contextlib.suppress(Exception):  # the body's error is the one to tell, not the ended capture's
                graph.capture_end()
            raise
        graph.capture_end()


@contextlib.contextmanager
def refused_host_syncs() -> Iterator[None]:
    """Inside, an operation that would make the host wait for the device raises (torch's sync debug mode, "error":
    a RuntimeError whose message holds ``SYNC_MESSAGE``) instead of waiting."""
    mode = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings():  # torch warns that the mode is a prototype
        warnings.simplefilter("ignore")
        torch.cuda.set_sync_debug_mode("error")
        try:
            yield
        finally:
            torch.cuda.set_sync_debug_mode(mode)


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _recover(device: torch.device) -> None:
    """Leave torch usable after a failed capture.

    When ``cudaStreamEndCapture`` fails, torch skips the epilogue that takes its CUDA RNG out of capture
    mode, and the next random op raises "Offset increment outside graph capture encountered unexpectedly"
    (seen with torch 2.11). A successful empty capture runs that epilogue.
    """
    torch.cuda.synchronize(device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that the graph is empty
        with capturing(torch.cuda.CUDAGraph(), torch.cuda.Stream(device)):
            pass
    torch.cuda.synchronize(device)
