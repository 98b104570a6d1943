"""The judges' phases of a run, summed and per evaluation, with some definitions apart from the rest.

A run with ``$FLASHINFER_BENCH_PHASES_FILE`` set (bench/runner/phase_log.py) appends one JSON line per verdict
with its evaluation's phases (bench/judge/phases.py). This prints, for each definition named with ``--apart`` and
then for all the others together: the evaluations, and per phase (and the whole evaluation) the seconds in all and
the median per evaluation. ``--each`` also prints every evaluation of the definitions set apart. ``--first`` splits
the others into each solution's first evaluation and its later ones (a solution's first item runs in a new worker,
whose first calls load their kernels' modules). Last, the time between evaluations on each device (from one's end
to the next one's start on the judge's clock: the parent's work and waits between items, such as a worker's
start-up), in all and the largest.

    FLASHINFER_BENCH_PHASES_FILE=phases.jsonl python3 benchmarks/dataset_check.py --max-workloads-per-definition 2
    python3 benchmarks/phase_split.py phases.jsonl --apart mla_paged_prefill_causal_h16_ckv512_kpe64_ps1 --each \
        --first
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
from pathlib import Path

#: The phases printed, in order (fields of EvaluationPhases); ``total_s`` is the whole evaluation.
PHASES = ("total_s", "build_s", "draws_s", "checks_s", "reference_s", "timed_s")


def summary(records: list[dict]) -> str:
    """Per phase: seconds in all, and the median per evaluation."""
    parts = [f"{len(records)} evaluations"]
    for name in PHASES:
        values = [r["phases"][name] for r in records]
        parts.append(f"{name[:-2]} {sum(values):.1f} s (median {statistics.median(values):.3f})")
    return "; ".join(parts)


def first_and_later(records: list[dict]) -> tuple[list[dict], list[dict]]:
    """Each (definition, solution)'s first evaluation (by start), and the later ones."""
    first, later, seen = [], [], set()
    for record in sorted(records, key=lambda r: r["phases"]["started_at"]):
        key = (record["definition"], record["solution"])
        (later if key in seen else first).append(record)
        seen.add(key)
    return first, later


def between(records: list[dict], largest: int = 3) -> list[str]:
    """Per device: the seconds between its evaluations in all, and the ``largest`` gaps with the solutions on
    either side."""
    lines = []
    for device in sorted({r["phases"]["device"] for r in records}):
        own = sorted((r for r in records if r["phases"]["device"] == device), key=lambda r: r["phases"]["started_at"])
        gaps = [(after["phases"]["started_at"] - before["phases"]["started_at"] - before["phases"]["total_s"],
                 before["solution"], after["solution"]) for before, after in itertools.pairwise(own)]
        top = ", ".join(f"{gap:.2f} s ({first} to {second})"
                        for gap, first, second in sorted(gaps, reverse=True)[:largest])
        lines.append(f"between evaluations on {device}: {sum(g for g, _, _ in gaps):.1f} s in all"
                     + (f"; the largest {top}" if top else ""))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("phases", type=Path, help="the file $FLASHINFER_BENCH_PHASES_FILE named")
    parser.add_argument("--apart", nargs="*", default=[], metavar="DEFINITION")
    parser.add_argument("--each", action="store_true", help="every evaluation of the definitions set apart too")
    parser.add_argument("--first", action="store_true",
                        help="the others split into each solution's first evaluation and its later ones")
    args = parser.parse_args()
    records = [json.loads(line) for line in args.phases.read_text().splitlines() if line.strip()]
    records = [r for r in records if r.get("phases") is not None]
    for name in args.apart:
        own = [r for r in records if r["definition"] == name]
        if own:
            print(f"{name}: {summary(own)}")
        if args.each:
            for r in own:
                times = ", ".join(f"{p[:-2]} {r['phases'][p]:.2f}" for p in PHASES)
                print(f"  {r['solution']} {r['workload']} {r['status']}: {times}")
    rest = [r for r in records if r["definition"] not in args.apart]
    if rest:
        print(f"{'the others' if args.apart else 'all'}: {summary(rest)}")
        if args.first:
            parts = zip(("first of each solution", "later ones"), first_and_later(rest), strict=True)
            for title, part in parts:
                if part:
                    print(f"  {title}: {summary(part)}")
    print("\n".join(between(records)))


if __name__ == "__main__":
    main()
