"""CUDA graphs: capture several calls of fn once, then time replays (per-call time = replay / calls)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch

from .steps import Step

# Calls captured per graph with a warm cache: enough to amortize the replay launch.
WARM_CALLS_PER_GRAPH = 10
#: What torch's sync debug mode warns of an operation that makes the host wait for the device.
SYNC_WARNING = "called a synchronizing CUDA operation"


class GraphCaptureFailed(RuntimeError):
    pass


def capture(call: Step, calls: int, device: torch.device,
            generators: Sequence[torch.Generator] = ()) -> torch.cuda.CUDAGraph:
    """A graph of ``call(0) ... call(calls - 1)``, captured on a side stream after one warm-up call there
    (libraries such as cuBLAS set up per-stream state on first use, which must not happen mid-capture).
    ``generators``: device generators besides the default one that the calls draw from; each replay starts them
    where they stand then (seeded before a replay, a generator gives that seed's draws).

    A warm-up call that waits for the device (``.item()``, a copy to the host: torch's sync debug mode tells) is
    not captured at all: the capture would fail, and a failed one cost a worker more than the call (under cProfile on
    an H100, about 7 s beside a 3 s Python reference of the real dataset, in torch's set-up and clean-up around it)."""
    stream = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    graph = torch.cuda.CUDAGraph()
    try:
        for generator in generators:
            graph.register_generator_state(generator)
        with torch.cuda.stream(stream), host_syncs() as synced:
            call(0)
        torch.cuda.synchronize(device)
    except Exception as exc:
        raise GraphCaptureFailed(_first_line(exc)) from exc
    if synced:
        raise GraphCaptureFailed(f"the call waits for the device ({synced[0]}), which a CUDA graph cannot hold")
    try:
        with torch.cuda.graph(graph, stream=stream):
            for k in range(calls):
                call(k)
        torch.cuda.synchronize(device)
    except Exception as exc:
        _recover(device)
        raise GraphCaptureFailed(_first_line(exc)) from exc
    return graph


@contextmanager
def host_syncs() -> Iterator[list[str]]:
    """The messages of torch's sync debug mode for the operations inside that made the host wait for the device
    (filled in on exit; empty where none did)."""
    found: list[str] = []
    mode = torch.cuda.get_sync_debug_mode()
    with warnings.catch_warnings(record=True) as caught:  # torch's own warning that the mode is a prototype too
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            yield found
        finally:
            torch.cuda.set_sync_debug_mode(mode)
    found.extend(str(w.message) for w in caught if SYNC_WARNING in str(w.message))


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
        with torch.cuda.graph(torch.cuda.CUDAGraph(), stream=torch.cuda.Stream(device)):
            pass
    torch.cuda.synchronize(device)
