"""How long the replayed rounds of a run's timed sessions lasted, by their size, from the judge's windows file.

A run with ``$FLASHINFER_BENCH_WINDOWS_FILE`` set (judge/windows.py) appends every session's rounds to it. This
reads the timed sessions' replayed rounds after the first (the ones the judge takes the work from,
judge/replayed.py ``work_per_call``), leaves out a session's rounds more than twice its median window (a graph
captured inside the round), and prints, per round size: how many sessions had rounds of it, the median over those
sessions of their least window, and the median and the most of their windows' spread. The exchange with the judge
and its noise are in every window, so the spread against the least window says how much of a round's window the
noise is (docs/security.md: the bound needs it small beside the work).

With ``--cycle N`` it prints instead, over every timed session of the files given (several runs of the same code),
the medians of a session's warm-up round, of its rounds and shipments in all, and of its trials' rounds' windows
per call (the rounds after judge/replayed.py ``RAMP_ROUNDS``), these grouped by the session's place in its file
modulo N: ``harness_overhead.py`` evaluates each solution over its ``--workloads`` workloads in order, so N = that
count groups them by workload.

    FLASHINFER_BENCH_WINDOWS_FILE=windows.jsonl python3 benchmarks/harness_overhead.py --runners persistent
With ``--shipments`` it prints instead, per file, the median window of the shipments of the timed sessions'
replayed rounds' picks, by how many calls a shipment carried (in fours).

With ``--totals`` it prints instead, per file, the timed sessions whose calls were replayed: how many, their warm-up
rounds' windows (median and sum: the graphs' capture and the buffer's page-locking fall there), their later rounds'
and their shipments' sums; and the shipments of every timed session.

    python3 benchmarks/replayed_rounds.py windows.jsonl [more.jsonl ...] [--cycle 8 | --shipments | --totals]
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

from run_costs import window_sums

from flashinfer_bench.bench.judge.replayed import RAMP_ROUNDS

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


def print_sessions(files: list[list[dict]], cycle: int) -> None:
    """The ``--cycle`` summary (see the module docstring)."""
    warmups, totals, per_call = [], [], defaultdict(list)
    for lines in files:
        for place, session in enumerate(s for s in lines if s["purpose"] == "timed"):
            rounds, shipments = session["rounds"], session["shipments"]
            warmups.append(rounds[0][2])
            totals.append(sum(r[2] for r in rounds) + sum(s[2] for s in shipments))
            trials = [r for r in rounds if r[4]][RAMP_ROUNDS:]
            if trials:
                per_call[place % cycle].append(statistics.median(r[2] / r[1] * 1e3 for r in trials))
    print(f"{len(warmups)} timed sessions: warm-up round {statistics.median(warmups):.1f} ms, rounds and shipments "
          f"{statistics.median(totals):.1f} ms (medians)")
    print("the trials' rounds, us per call, by place modulo the cycle: "
          + ", ".join(f"{statistics.median(per_call[g]):.2f}" for g in sorted(per_call)))


#: ``--shipments`` groups shipments by their calls in bins this wide.
SHIPMENT_BIN = 4


def print_shipments(name: str, lines: list[dict]) -> None:
    """The ``--shipments`` summary of one file (see the module docstring)."""
    bins: dict[int, list[float]] = defaultdict(list)
    for session in lines:
        replayed = [r for r in session["rounds"] if r[4]]
        if session["purpose"] != "timed" or not replayed:
            continue
        for first, calls, wall_ms, *_ in session["shipments"]:  # (first index, calls, wall_ms, held_ms)
            if first >= replayed[0][0]:
                bins[calls // SHIPMENT_BIN * SHIPMENT_BIN].append(wall_ms)
    print(f"{name}: " + ", ".join(f"{low}-{low + SHIPMENT_BIN - 1} calls {statistics.median(walls):.2f} ms "
                                  f"({len(walls)})" for low, walls in sorted(bins.items())))


def print_totals(name: str, lines: list[dict]) -> None:
    """The ``--totals`` summary of one file (see the module docstring)."""
    timed = [session for session in lines if session["purpose"] == "timed"]
    replayed = [session for session in timed if session["rounds"] and session["rounds"][-1][4]]
    warmups, later, shipped = window_sums(replayed)
    every_shipment = window_sums(timed)[2]
    middle = f"median {statistics.median(warmups):.1f} ms, " if warmups else ""
    print(f"{name}: {len(replayed)} of {len(timed)} timed sessions replayed: warm-up rounds {middle}"
          f"{sum(warmups):.0f} ms in all; their later rounds {later:.0f} ms, their shipments {shipped:.0f} ms; "
          f"every timed session's shipments {every_shipment:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("windows", type=Path, nargs="+", help="files $FLASHINFER_BENCH_WINDOWS_FILE named")
    parser.add_argument("--cycle", type=int, help="summarise sessions instead, grouped by place modulo this")
    parser.add_argument("--shipments", action="store_true", help="the replayed rounds' shipments instead, by size")
    parser.add_argument("--totals", action="store_true", help="per file, where the timed sessions' time went")
    args = parser.parse_args()
    files = [[json.loads(line) for line in path.read_text().splitlines() if line.strip()] for path in args.windows]
    if args.totals:
        for path, lines in zip(args.windows, files, strict=True):
            print_totals(path.name, lines)
        return
    if args.shipments:
        for path, lines in zip(args.windows, files, strict=True):
            print_shipments(path.name, lines)
        return
    if args.cycle:
        print_sessions(files, args.cycle)
        return
    lines = [session for found in files for session in found]
    print(f"{'calls in a round':>16} {'sessions':>9} {'least window (median)':>22} {'spread: median, most':>21}")
    for calls, sessions in by_round_size(lines).items():
        least = statistics.median(low for low, _ in sessions)
        spreads = [spread for _, spread in sessions]
        print(f"{calls:>16} {len(sessions):>9} {least:>19.2f} ms {statistics.median(spreads):>11.2f}, "
              f"{max(spreads):.2f} ms")


if __name__ == "__main__":
    main()
