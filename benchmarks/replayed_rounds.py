"""How long the replayed rounds of a run's timed sessions lasted, by their size, from the judge's windows file.

A run with ``$FLASHINFER_BENCH_WINDOWS_FILE`` set (judge/windows.py) appends every session's rounds to it. This
reads the timed sessions' replayed rounds after the first (the ones the judge takes the work from,
judge/replayed.py ``work_per_call``), leaves out a session's rounds more than twice its median window (a graph
captured inside the round), and prints, per round size: how many sessions had rounds of it, the median over those
sessions of their least window, and the median and the most of their windows' spread. The exchange with the judge
and its noise are in every window, so the spread against the least window says how much of a round's window the
noise is (docs/security.md: the bound needs it small beside the work).

    FLASHINFER_BENCH_WINDOWS_FILE=windows.jsonl python3 benchmarks/harness_overhead.py --runners persistent
    python3 benchmarks/replayed_rounds.py windows.jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

#: A round's window beyond this many times its session's median holds a graph's capture, not just the calls.
CAPTURE_FACTOR = 2.0


def later_windows(session: dict) -> list[tuple[int, float]]:
    """(calls, window in ms) of a session's replayed rounds after the first, a capture's round left out."""
    replayed = [r for r in session["rounds"] if r[4]][1:]  # rounds: (first, calls, wall_ms, held_ms, replayed)
    if not replayed:
        return []
    middle = statistics.median(r[2] for r in replayed)
    return [(r[1], r[2]) for r in replayed if r[2] < CAPTURE_FACTOR * middle]


def by_round_size(lines: list[dict]) -> dict[int, list[tuple[float, float]]]:
    """Per round size (a session's first later round's), each timed session's least window and spread."""
    sizes: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for session in lines:
        if session["purpose"] != "timed" or not (windows := later_windows(session)):
            continue
        walls = [wall for _, wall in windows]
        sizes[windows[0][0]].append((min(walls), max(walls) - min(walls)))
    return dict(sorted(sizes.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("windows", type=Path, help="the file $FLASHINFER_BENCH_WINDOWS_FILE named")
    args = parser.parse_args()
    lines = [json.loads(line) for line in args.windows.read_text().splitlines() if line.strip()]
    print(f"{'calls in a round':>16} {'sessions':>9} {'least window (median)':>22} {'spread: median, most':>21}")
    for calls, sessions in by_round_size(lines).items():
        least = statistics.median(low for low, _ in sessions)
        spreads = [spread for _, spread in sessions]
        print(f"{calls:>16} {len(sessions):>9} {least:>19.2f} ms {statistics.median(spreads):>11.2f}, "
              f"{max(spreads):.2f} ms")


if __name__ == "__main__":
    main()
