"""How close a timing loop with fresh inputs for every call can come to the device's own time per call: the floor
a device-bound worker (issue 30's redesign) could reach, against today's shape of one synchronised call at a time.

One call is a spin kernel of ``--sizes`` microseconds (device clock cycles) followed by ``out = 2 x + y`` on ``--n``
floats. Every call gets fresh inputs drawn on the device from a generator (``randn`` into the inputs' buffers) and
its outputs are kept (copied into a ring of ``--round`` buffers, as a worker keeps a round's outputs for the
judge's picks). Per size, the wall time per call (``time.perf_counter`` around ``--calls`` calls, after warm-up) of:

- ``synced``: draw, call, keep, then wait for the device, call after call (the shape of today's loop, without its
  timer and judge);
- ``queued``: the same calls enqueued back to back, one wait at the end of each round;
- ``graph``: a round's draws, calls and copies captured once as a CUDA graph and replayed (the generator's
  offsets advance with each replay, so every replay draws fresh values);

and what each costs beyond the spin. Graph replays leave the host out: what is left beyond the spin is the device's
own work on the draws, the compute and the copy, which a judge can time itself and subtract. A judge that clocks a
session of replays sees the device's time; one that clocks ``synced`` or ``queued`` calls sees the host's.

    python benchmarks/device_bound_loop.py [--sizes 0,5,20,100] [--n 1048576] [--calls 2000] [--round 100]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch


def spin_cycles(us: float, device: torch.device) -> int:
    return int(us * torch.cuda.get_device_properties(device).clock_rate / 1e3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0,5,20,100")
    parser.add_argument("--n", type=int, default=1 << 20)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--round", type=int, default=100)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("needs a CUDA device")
    device = torch.device("cuda:0")
    torch.cuda.manual_seed(1234)  # the default generator: a graph's capture registers it (its offsets advance)
    x = torch.empty(args.n, device=device)
    y = torch.empty(args.n, device=device)
    out = torch.empty(args.n, device=device)
    kept = torch.empty(args.round, args.n, device=device)

    def one_call(cycles: int, slot: int) -> None:
        torch.randn(args.n, device=device, out=x)
        torch.randn(args.n, device=device, out=y)
        torch.cuda._sleep(cycles)
        torch.add(y, x, alpha=2, out=out)
        kept[slot].copy_(out)

    print(f"{torch.cuda.get_device_name(device)}; n = {args.n}, {args.calls} calls, rounds of {args.round}")
    print(f"{'spin':>6} {'synced us':>10} {'queued us':>10} {'graph us':>9}   "
          f"(wall per call; beyond the spin: synced / queued / graph)")
    rounds = max(1, args.calls // args.round)
    for us in (int(s) for s in args.sizes.split(",")):
        walls = measure(spin_cycles(us, device), rounds, args.round, one_call, device)
        beyond = " / ".join(f"{wall - us:.1f}" for wall in walls)
        print(f"{us:>5}u {walls[0]:>10.1f} {walls[1]:>10.1f} {walls[2]:>9.1f}   ({beyond})")


def measure(cycles: int, rounds: int, round_calls: int, one_call: Callable[[int, int], None],
            device: torch.device) -> list[float]:
    """The wall time per call (us) of synced, queued and graph."""
    def synced() -> None:
        for k in range(rounds * round_calls):
            one_call(cycles, k % round_calls)
            torch.cuda.synchronize()

    def queued() -> None:
        for _ in range(rounds):
            for k in range(round_calls):
                one_call(cycles, k)
            torch.cuda.synchronize()

    stream = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        one_call(cycles, 0)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for k in range(round_calls):
            one_call(cycles, k)

    def replayed() -> None:
        for _ in range(rounds):
            graph.replay()
            torch.cuda.synchronize()

    walls = []
    for run in (synced, queued, replayed):
        run()  # warm-up
        torch.cuda.synchronize()
        began = time.perf_counter()
        run()
        torch.cuda.synchronize()
        walls.append((time.perf_counter() - began) * 1e6 / (rounds * round_calls))
    return walls

if __name__ == "__main__":
    main()
