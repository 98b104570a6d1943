"""CUDA graphs: capture several calls of fn once, then time replays (per-call time = replay / calls)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import torch

from .steps import Step

# Calls captured per graph with a warm cache: enough to amortize the replay launch.
WARM_CALLS_PER_GRAPH = 10


class GraphCaptureFailed(RuntimeError):
    pass


def capture(call: Step, calls: int, device: torch.device,
            generators: Sequence[torch.Generator] = ()) -> torch.cuda.CUDAGraph:
    """A graph of ``call(0) ... call(calls - 1)``, captured on a side stream after one warm-up call there
    (libraries such as cuBLAS set up per-stream state on first use, which must not happen mid-capture).
    ``generators``: device generators besides the default one that the calls draw from; each replay starts them
    where they stand then (seeded before a replay, a generator gives that seed's draws)."""
    stream = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    graph = torch.cuda.CUDAGraph()
    try:
        for generator in generators:
            graph.register_generator_state(generator)
        with torch.cuda.stream(stream):
            call(0)
        torch.cuda.synchronize(device)
        with torch.cuda.graph(graph, stream=stream):
            for k in range(calls):
                call(k)
        torch.cuda.synchronize(device)
    except Exception as exc:
        _recover(device)
        raise GraphCaptureFailed(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from exc
    return graph


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
