"""What the judge's shipments of picked outputs take, against the round before each: the solutions of
``claim_bounds.py`` (honest ones and liars, a spin kernel on a GPU, a host busy-wait on the CPU) run at the default
settings with ``$FLASHINFER_BENCH_WINDOWS_FILE`` set (judge/windows.py), then, for the calibration's sessions and
the solutions' timed shipments apart, one-call shipments' times less the waits for a CPU that came out of them,
grouped by the window of the round whose call they carried; and how many shipments had no wait for a CPU at all.

    python3 benchmarks/shipment_windows.py [--sizes 5,20,100,1000] [--busy]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import tempfile
from pathlib import Path

import claim_bounds

#: Rounds are grouped by their window, in ms: below each bound, and above the last.
ROUND_BOUNDS_MS = (1.0, 3.0)


def shipments(path: Path) -> dict[str, list[tuple[float, float, float]]]:
    """Per purpose, (window of the round it shipped from, ms less the waits taken out, waits) of each one-call
    shipment after the warm-up's."""
    found: dict[str, list[tuple[float, float, float]]] = {}
    for line in path.read_text().splitlines():
        session = json.loads(line)
        rounds = session["rounds"]  # (first, calls, wall_ms, held_ms, replayed)
        for first_index, calls, ship_ms, held_ms in session["shipments"]:
            before = next(r for r in rounds if r[0] <= first_index < r[0] + r[1])
            if calls == 1 and before[0] > 0:
                held = held_ms * session["held_scale"]
                found.setdefault(session["purpose"], []).append((before[2], ship_ms - held, held))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5,20,100,1000")
    parser.add_argument("--busy", action="store_true", help="a busy-loop process per core during the run")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    root = claim_bounds.make_trace_set(folder / "set", [int(s) for s in args.sizes.split(",")], 2)
    log = folder / "windows.jsonl"
    os.environ["FLASHINFER_BENCH_WINDOWS_FILE"] = str(log)
    loops = [multiprocessing.Process(target=claim_bounds.busy_loop, daemon=True)
             for _ in range(os.cpu_count() or 1)] if args.busy else []
    for loop in loops:
        loop.start()
    try:
        claim_bounds.run(root)
    finally:
        for loop in loops:
            loop.kill()
    print(f"one-call shipments, ms less the waits for a CPU taken out ({'busy' if args.busy else 'quiet'} host)")
    for purpose, found in sorted(shipments(log).items()):
        edges = (0.0, *ROUND_BOUNDS_MS, float("inf"))
        for low, high in zip(edges, edges[1:], strict=False):
            times = sorted(t for round_ms, t, _ in found if low <= round_ms < high)
            if times:
                print(f"{purpose:>12}, after rounds of {low:g}-{high:g} ms: {len(times):>4} shipments, median "
                      f"{statistics.median(times):.3f}, {times[0]:.3f}-{times[-1]:.3f}")
        unheld = sorted(t for _, t, held in found if held == 0)
        if unheld:
            print(f"{purpose:>12}, with no wait for a CPU: {len(unheld)} of {len(found)}, {unheld[0]:.3f}-"
                  f"{unheld[-1]:.3f} ms")


if __name__ == "__main__":
    main()
