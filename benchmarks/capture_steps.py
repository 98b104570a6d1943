"""What one call of a replayed round costs the host, made eagerly and captured (bench/replay.py ``ReplayedCalls``).

For ``scale_add`` (a torch ``add`` into a destination buffer) at each of ``--sizes`` elements, prints the host's
time per step made eagerly and the time to capture a graph of ``GRAPH_MOST_CALLS`` steps: the whole step, the step
without the solution's call, and without the copy of its outputs into the ring; then the draw (with the swap into
the inputs), a bare ``torch.randn`` of the same size and the bare call, each made eagerly. Needs a CUDA device.

    python3 benchmarks/capture_steps.py [--sizes 4096,524288] [--captures 3]
"""

from __future__ import annotations

import argparse
import time

import timed_call_costs
import torch

from flashinfer_bench.bench.calling import take_values
from flashinfer_bench.bench.inputs import InputPlan
from flashinfer_bench.bench.replay import GRAPH_MOST_CALLS, ReplayedCalls
from flashinfer_bench.bench.slot import output_layouts
from flashinfer_bench.data import Definition, Workload
from flashinfer_bench.timing.graph import capture


def eager_us(step, calls: int = GRAPH_MOST_CALLS) -> float:
    """The host's time per call of ``calls`` calls of ``step`` (the device's queue is not waited for)."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    for k in range(calls):
        step(k)
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed / calls * 1e6


def step_costs(replayed: ReplayedCalls, device: torch.device, captures: int) -> tuple[float, list[float]]:
    """A step's host time made eagerly (us), and the times of ``captures`` captures of a graph of steps (ms)."""
    def step(k: int) -> None:
        replayed._step(k, GRAPH_MOST_CALLS)

    step_us, captures_ms = eager_us(step), []
    for _ in range(captures):
        replayed.rewind()
        start = time.perf_counter()
        capture(step, GRAPH_MOST_CALLS, device, [replayed.generator])
        captures_ms.append((time.perf_counter() - start) * 1e3)
    return step_us, captures_ms


def report(definition: Definition, n: int, device: torch.device, captures: int) -> None:
    workload = Workload(uuid="w", axes={"n": n}, inputs={})
    plan = InputPlan(definition, workload, str(device), None)
    inputs, out = plan.draw(0), [torch.empty(n, device=device)]

    def solution() -> None:
        torch.add(inputs[1], inputs[0], alpha=2, out=out[0])

    solution()  # the kernel's module loaded before anything is timed
    ways = {"whole step": (solution, lambda: out), "no call": (lambda: None, lambda: out),
            "no ring copy": (solution, None)}
    for name, (call, outputs) in ways.items():
        replayed = ReplayedCalls(plan, inputs, call, outputs, output_layouts(definition, workload), GRAPH_MOST_CALLS)
        step_us, captures_ms = step_costs(replayed, device, captures)
        print(f"n={n:>8} {name:13s} eager {step_us:6.1f} us a step; a {GRAPH_MOST_CALLS}-call capture "
              f"{min(captures_ms):6.2f}-{max(captures_ms):6.2f} ms")
    generator = torch.Generator(device=device)
    draw_us = eager_us(lambda k: take_values(inputs, plan.draw_from(generator, 0)))
    randn_us = eager_us(lambda k: torch.randn(2 * n, device=device, generator=generator))
    call_us = eager_us(lambda k: solution())
    print(f"n={n:>8} eager: draw and swap {draw_us:.1f} us, bare randn {randn_us:.1f} us, bare call {call_us:.1f} us")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4096,524288")
    parser.add_argument("--captures", type=int, default=3)
    args = parser.parse_args()
    definition = Definition.model_validate(timed_call_costs.SCALE_ADD)
    for n in (int(size) for size in args.sizes.split(",")):
        report(definition, n, torch.device("cuda:0"), args.captures)


if __name__ == "__main__":
    main()
