"""The judge's time to copy a session's shipped outputs out of the worker's buffer (bench/slot.py ``Slot.read``):
into fresh memory, as before judge/arena.py, and into an arena handed from one session to the next.

Each session ships ``--picks`` calls of one output of ``--sizes`` MB and keeps them until it ends, as the judge
keeps picked calls until it judges them; the first session of each way is not counted (the arena's memory is
touched there first). Prints per size the median ms per session over ``--sessions`` sessions, each way.

    python3 benchmarks/shipment_copies.py [--sizes 0.0625,1,4,16] [--picks 8] [--sessions 20]
"""

from __future__ import annotations

import argparse
import statistics
import time


def session_ms(size_mb: float, picks: int, sessions: int, arena: bool) -> float:
    import torch

    from flashinfer_bench.bench.judge.arena import give_back, lease
    from flashinfer_bench.bench.slot import Slot, TensorLayout

    layouts = [TensorLayout("out", torch.float32, (int(size_mb * 2**20) // 4,))]
    slot = Slot.create(max(layouts[0].nbytes, 4096))
    slot.write(0, [torch.ones(layouts[0].shape)])
    times = []
    for _ in range(sessions + 1):
        leased = lease() if arena else None
        start = time.perf_counter()
        kept = [slot.read(0, layouts, "cpu", leased.take if leased else None)[0] for _ in range(picks)]
        times.append((time.perf_counter() - start) * 1e3)
        assert all(float(t[0][-1]) == 1.0 for t in kept)
        del kept
        if leased is not None:
            give_back(leased)
    slot.close()
    return statistics.median(times[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0.0625,1,4,16")
    parser.add_argument("--picks", type=int, default=8)
    parser.add_argument("--sessions", type=int, default=20)
    args = parser.parse_args()
    print(f"{'output MB':>10} {'fresh ms':>9} {'arena ms':>9}   (per session of {args.picks} picked calls)")
    for size in (float(s) for s in args.sizes.split(",")):
        fresh = session_ms(size, args.picks, args.sessions, arena=False)
        kept = session_ms(size, args.picks, args.sessions, arena=True)
        print(f"{size:>10g} {fresh:>9.3f} {kept:>9.3f}")


if __name__ == "__main__":
    main()
