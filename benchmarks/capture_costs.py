"""What a replayed session's set-up costs the worker (bench/replay.py ``ReplayedCalls``): its ring, its graph's
capture, and then a round's replays, by the calls a graph holds.

For ``scale_add`` at each of ``--sizes`` elements, destination-passing and value-returning, and each graph size of
``--graph-calls`` (the harness's is ``GRAPH_MOST_CALLS``; others are tried by setting it here), makes ``--sessions``
sessions as a worker makes them one after another (each its own ``ReplayedCalls`` with a ring of as many rows as a
replayed round keeps, judge/replayed.py): the host time to make the ring and to capture the graph (with its first
replay), then of queueing a round of as many calls as the ring holds, and that round's device time per call.
Medians over the sessions. ``--keep-cache``: the device's caching allocator is not emptied before a capture, as
timing/graph.py ``capturing`` does. Needs a CUDA device.

    python3 benchmarks/capture_costs.py [--sizes 4096,65536,524288] [--graph-calls 16,32,64] [--sessions 4]
                                        [--keep-cache] [--draw-in-place]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import timed_call_costs
import torch

from flashinfer_bench.bench import replay
from flashinfer_bench.bench.inputs import InputPlan
from flashinfer_bench.bench.judge.replayed import REPLAYED_KEPT_BYTES, REPLAYED_MOST_CALLS
from flashinfer_bench.bench.slot import output_layouts, total_bytes
from flashinfer_bench.data import Definition, Workload
from flashinfer_bench.timing import graph as graph_module


def session(plan: InputPlan, layouts: list, destination_passing: bool, graph_calls: int) -> dict[str, float]:
    """One session's set-up and round, timed."""
    n = layouts[0].shape[0]
    inputs = plan.draw(0)
    out = torch.empty(n, device=plan.device)
    latest = [out]  # the latest call's output
    if destination_passing:
        def call() -> None:
            torch.add(inputs[1], inputs[0], alpha=2, out=out)
    else:
        def call() -> None:
            latest[0] = torch.add(inputs[1], inputs[0], alpha=2)
    rows = max(1, min(REPLAYED_MOST_CALLS, REPLAYED_KEPT_BYTES // total_bytes(layouts)))
    torch.cuda.synchronize()
    started = time.perf_counter()
    replayed = replay.ReplayedCalls(plan, inputs, call, lambda: tuple(latest), layouts, rows,
                                    destinations=[out] if destination_passing else ())
    torch.cuda.synchronize()
    made = time.perf_counter()
    replayed.graph(min(graph_calls, rows))
    captured = time.perf_counter()
    replayed.run(1, rows)
    queued = time.perf_counter()
    replayed.wait()
    return {"ring_ms": (made - started) * 1e3, "capture_ms": (captured - made) * 1e3,
            "queue_ms": (queued - captured) * 1e3, "device_us_per_call": replayed.replay_ms() * 1e3,
            "rows": rows}


def in_place_draw(n: int):
    """A draw of scale_add's two inputs into one buffer of its own, the same at every call."""
    drawn = torch.empty(2 * n, device="cuda:0")

    def draw(generator: torch.Generator, seed: int) -> list[torch.Tensor]:
        torch.randn(2 * n, generator=generator, out=drawn)
        return [drawn[:n], drawn[n:]]
    return draw


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4096,65536,524288")
    parser.add_argument("--graph-calls", default="16,32,64")
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--keep-cache", action="store_true")
    parser.add_argument("--draw-in-place", action="store_true")
    args = parser.parse_args()
    if args.keep_cache:
        graph_module.torch.cuda.empty_cache = lambda: None  # what capturing() calls, here only
    definition = Definition.model_validate(timed_call_costs.SCALE_ADD)
    print(f"{'n':>8} {'convention':<11} {'graph':>5} {'rows':>5} {'ring ms':>8} {'capture ms':>10} "
          f"{'queue ms':>9} {'device us/call':>14}")
    for n in (int(s) for s in args.sizes.split(",")):
        workload = Workload(uuid="w", axes={"n": n}, inputs={})
        plan = InputPlan(definition, workload, "cuda:0", None)
        layouts = output_layouts(definition, workload)
        if args.draw_in_place:
            plan.draw_from = in_place_draw(n)
        for destination_passing in (True, False):
            for graph_calls in (int(s) for s in args.graph_calls.split(",")):
                replay.GRAPH_MOST_CALLS = graph_calls
                session(plan, layouts, destination_passing, graph_calls)  # first of its kind: loads, caches
                gc.collect()
                runs = []
                for _ in range(args.sessions):
                    runs.append(session(plan, layouts, destination_passing, graph_calls))
                    gc.collect()
                med = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
                print(f"{n:>8} {'dps' if destination_passing else 'value':<11} {graph_calls:>5} {int(med['rows']):>5} "
                      f"{med['ring_ms']:>8.2f} {med['capture_ms']:>10.2f} {med['queue_ms']:>9.2f} "
                      f"{med['device_us_per_call']:>14.3f}", flush=True)


if __name__ == "__main__":
    main()
