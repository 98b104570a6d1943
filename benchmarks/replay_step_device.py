"""What one call of a replayed round costs the device, part by part (bench/replay.py ``ReplayedCalls``).

For ``scale_add`` (a torch ``add`` into a destination buffer) at each of ``--sizes`` elements, captures graphs of
``GRAPH_MOST_CALLS`` calls of each way of making a step, replays each back to back ``--replays`` times, and prints
the device's time per call (the least and the median over the replays, CUDA events around each): the step as the
harness makes it for a value-returning call (its outputs copied into the ring) and for a destination-passing one
(written in place), its parts alone (the solution's call, the draw, a copy into a row the device works out, as
index_copy_ makes it, and into a fixed row), a graph's draws made at once (which the harness does not do: every
call would see the inputs of the calls after it), and the kernels one replay of the whole step launched, from
torch's profiler. Needs a CUDA device.

    python3 benchmarks/replay_step_device.py [--sizes 4096,65536,524288] [--replays 16]
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable

import timed_call_costs
import torch

from flashinfer_bench.bench.calling import take_values
from flashinfer_bench.bench.inputs import InputPlan
from flashinfer_bench.bench.replay import GRAPH_MOST_CALLS, ReplayedCalls
from flashinfer_bench.bench.slot import output_layouts, raw_bytes
from flashinfer_bench.data import Definition, Workload
from flashinfer_bench.timing.graph import capture


def per_call_us(graph: torch.cuda.CUDAGraph, before: Callable[[], None], replays: int) -> tuple[float, float]:
    """The least and the median device time per call of ``replays`` replays of ``graph``, queued back to back
    (``before`` each: what the harness queues ahead of a replay)."""
    marks = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(replays)]
    for start, end in marks:
        before()
        start.record()
        graph.replay()
        end.record()
    torch.cuda.synchronize()
    times = [start.elapsed_time(end) * 1e3 / GRAPH_MOST_CALLS for start, end in marks]
    return min(times), statistics.median(times)


def kernels_of(graph: torch.cuda.CUDAGraph, before: Callable[[], None]) -> str:
    """The kernels one replay of ``graph`` launches (``before`` it: as for ``per_call_us``), by name, with their
    count and mean device time."""
    from torch.profiler import ProfilerActivity, profile

    before()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        graph.replay()
        torch.cuda.synchronize()
    rows = [e for e in prof.key_averages() if e.device_type == torch.autograd.DeviceType.CUDA]
    return "; ".join(f"{e.count}x {e.key[:60]} {e.device_time_total / max(e.count, 1):.2f} us"
                     for e in sorted(rows, key=lambda e: -e.device_time_total)[:8])


def report(definition: Definition, n: int, device: torch.device, replays: int) -> None:
    workload = Workload(uuid="w", axes={"n": n}, inputs={})
    plan = InputPlan(definition, workload, str(device), None)
    layouts = output_layouts(definition, workload)
    inputs, out = plan.draw(0), [torch.empty(n, device=device)]

    def solution() -> None:
        torch.add(inputs[1], inputs[0], alpha=2, out=out[0])

    solution()
    replayed = ReplayedCalls(plan, inputs, solution, lambda: out, layouts, GRAPH_MOST_CALLS)
    whole = replayed.graph(GRAPH_MOST_CALLS)
    generator = replayed.generator
    stage = torch.empty((GRAPH_MOST_CALLS, n * 4), dtype=torch.uint8, device=device)
    rows = torch.arange(GRAPH_MOST_CALLS, device=device)

    drawn: list[torch.Tensor] = []

    def batched_draw(k: int) -> None:
        if k == 0:
            drawn[:] = [torch.randn(GRAPH_MOST_CALLS * 2 * n, device=device, generator=generator)]
        take_values(inputs, [drawn[0][2 * k * n:(2 * k + 1) * n], drawn[0][(2 * k + 1) * n:(2 * k + 2) * n]])

    ways: dict[str, Callable[[int], None]] = {
        "the call alone": lambda k: solution(),
        "the draw alone": lambda k: take_values(inputs, plan.draw_from(generator, 0)),
        "the ring copy alone": lambda k: replayed.ring.index_copy_(0, rows[k:k + 1], raw_bytes(out[0]).unsqueeze(0)),
        "a copy into a fixed row": lambda k: stage[k].copy_(raw_bytes(out[0])),
        "a graph's draws at once": batched_draw,
        "batched draw, call, fixed-row copy": lambda k: (batched_draw(k), solution(), stage[k].copy_(raw_bytes(out[0]))),
    }
    def rewound() -> None:
        replayed.rewind()
        generator.manual_seed(1)

    least, middle = per_call_us(whole, rewound, replays)
    print(f"n={n:>8} {'the whole step':36s} {least:6.2f} us a call (median {middle:6.2f})")
    in_place = ReplayedCalls(plan, inputs, solution, lambda: out, layouts, GRAPH_MOST_CALLS, destinations=out)
    graph = in_place.graph(GRAPH_MOST_CALLS)
    least, middle = per_call_us(graph, lambda: (in_place.rewind(), in_place.generator.manual_seed(1)), replays)
    print(f"n={n:>8} {'the whole step, outputs in place':36s} {least:6.2f} us a call (median {middle:6.2f})")
    for name, step in ways.items():
        graph = capture(step, GRAPH_MOST_CALLS, device, [generator])
        graph.replay()
        least, middle = per_call_us(graph, lambda: None, replays)
        print(f"n={n:>8} {name:36s} {least:6.2f} us a call (median {middle:6.2f})")
    print(f"n={n:>8} the whole step's kernels: {kernels_of(whole, rewound)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4096,65536,524288")
    parser.add_argument("--replays", type=int, default=16)
    args = parser.parse_args()
    definition = Definition.model_validate(timed_call_costs.SCALE_ADD)
    for n in (int(size) for size in args.sizes.split(",")):
        report(definition, n, torch.device("cuda:0"), args.replays)


if __name__ == "__main__":
    main()
