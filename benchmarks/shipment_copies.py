"""The judge's time to copy a session's shipped outputs out of the worker's buffer (bench/slot.py ``Slot.read``):
into fresh memory, as before judge/arena.py, and into an arena handed from one session to the next.

Each session ships ``--picks`` calls of one output of ``--sizes`` MB and keeps them until it ends, as the judge
keeps picked calls until it judges them; the first session of each way is not counted (the arena's memory is
touched there first). Prints per size the median ms per session over ``--sessions`` sessions, each way: a read
per call, and one read of the whole shipment (as judge/solution.py ``read_outputs`` reads a round's picks) by one
thread and by ``slot.COPY_THREADS`` (``host_copy``), with the GB/s of each.

    python3 benchmarks/shipment_copies.py [--sizes 0.0625,1,4,16] [--picks 8] [--sessions 20]
"""

from __future__ import annotations

import argparse
import statistics
import time


def session_ms(size_mb: float, picks: int, sessions: int, arena: bool, shipment_threads: int = 0) -> float:
    """``shipment_threads``: the session's picks in one read (``read_outputs``) on this many copying threads; 0: a
    read per call."""
    import torch

    from flashinfer_bench.bench import slot as slot_module
    from flashinfer_bench.bench.judge.arena import give_back, lease
    from flashinfer_bench.bench.judge.solution import read_outputs
    from flashinfer_bench.bench.slot import Slot, TensorLayout

    layouts = [TensorLayout("out", torch.float32, (int(size_mb * 2**20) // 4,))]
    slot = Slot.create(max(layouts[0].nbytes * (picks if shipment_threads else 1), 4096))
    for pick in range(picks if shipment_threads else 1):
        slot.write(pick * layouts[0].nbytes, [torch.ones(layouts[0].shape)])
    slot_module.COPY_THREADS, threads = shipment_threads or 1, slot_module.COPY_THREADS
    times = []
    for _ in range(sessions + 1):
        leased = lease() if arena else None
        start = time.perf_counter()
        if shipment_threads:
            kept = read_outputs(slot, layouts, picks, "cpu", leased.take if leased else None)[0]
        else:
            kept = [slot.read(0, layouts, "cpu", leased.take if leased else None)[0] for _ in range(picks)]
        times.append((time.perf_counter() - start) * 1e3)
        assert all(float(t[0][-1]) == 1.0 for t in kept)
        del kept
        if leased is not None:
            give_back(leased)
    slot.close()
    slot_module.COPY_THREADS = threads
    return statistics.median(times[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0.0625,1,4,16")
    parser.add_argument("--picks", type=int, default=8)
    parser.add_argument("--sessions", type=int, default=20)
    args = parser.parse_args()
    from flashinfer_bench.bench.slot import COPY_THREADS

    print(f"{'output MB':>10} {'fresh ms':>17} {'arena ms':>17} {'one read':>17} {f'{COPY_THREADS} threads':>17}"
          f"   (per session of {args.picks} picked calls; GB/s in brackets)")
    for size in (float(s) for s in args.sizes.split(",")):
        ways = [session_ms(size, args.picks, args.sessions, arena=False),
                session_ms(size, args.picks, args.sessions, arena=True),
                session_ms(size, args.picks, args.sessions, arena=True, shipment_threads=1),
                session_ms(size, args.picks, args.sessions, arena=True, shipment_threads=COPY_THREADS)]
        gigabytes = size * args.picks / 1024
        print(f"{size:>10g} " + " ".join(f"{ms:>9.3f} ({gigabytes / ms * 1e3:5.1f})" for ms in ways))


if __name__ == "__main__":
    main()
