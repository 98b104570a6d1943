"""The harness's own device work per call in a replayed round (bench/replay.py ``harness_device_ms``: a draw of the
inputs, a copy of the outputs into the ring), by the size of the graph a round replays: a replay costs the device
something beyond its calls, whose share per call shrinks with the graph. The judge subtracts this measure from a
replayed session's samples and windows (judge/replayed.py), so it is taken on the graph the later rounds replay,
with a ring of as many rows as a round of small calls keeps (``REPLAYED_MOST_CALLS``: filled through a stage).

    python benchmarks/harness_graph_sizes.py [--sizes 4096,65536,524288] [--graphs 1,4,16,64,256]

Prints, per element count of a scale_add (two float32 inputs, one output), the least of three measures per graph
size, in microseconds per call. Needs a GPU.
"""

from __future__ import annotations

import argparse

import harness_overhead
import torch

from flashinfer_bench.bench.inputs import InputPlan
from flashinfer_bench.bench.judge.replayed import REPLAYED_MOST_CALLS
from flashinfer_bench.bench.replay import harness_device_ms
from flashinfer_bench.bench.slot import output_layouts
from flashinfer_bench.data import Definition, Workload

SCALE_ADD = Definition.model_validate(harness_overhead.SCALE_ADD)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4096,65536,524288")
    parser.add_argument("--graphs", default="1,4,16,64,256")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("needs a CUDA GPU")
    graphs = [int(g) for g in args.graphs.split(",")]
    print("elements  " + "  ".join(f"{g:>8d}" for g in graphs) + "   (us per call, by calls per graph)")
    for n in (int(s) for s in args.sizes.split(",")):
        workload = Workload(uuid=f"n{n}", axes={"n": n}, inputs={})
        plan, layouts = InputPlan(SCALE_ADD, workload, "cuda", None), output_layouts(SCALE_ADD, workload)
        per_call = [min(harness_device_ms(plan, layouts, g, REPLAYED_MOST_CALLS, False) for _ in range(3)) * 1e3
                    for g in graphs]
        print(f"{n:>8d}  " + "  ".join(f"{us:8.3f}" for us in per_call))


if __name__ == "__main__":
    main()
