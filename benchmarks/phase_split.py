"""The judges' phases of a run, summed and per evaluation, with some definitions apart from the rest.

A run with ``$FLASHINFER_BENCH_PHASES_FILE`` set (bench/runner/phase_log.py) appends one JSON line per verdict
with its evaluation's phases (bench/judge/phases.py). This prints, for each definition named with ``--apart`` and
then for all the others together: the evaluations, and per phase (and the whole evaluation) the seconds in all and
the median per evaluation. ``--each`` also prints every evaluation of the definitions set apart.

    FLASHINFER_BENCH_PHASES_FILE=phases.jsonl python3 benchmarks/dataset_check.py --max-workloads-per-definition 2
    python3 benchmarks/phase_split.py phases.jsonl --apart mla_paged_prefill_causal_h16_ckv512_kpe64_ps1 --each
"""

from __future__ import annotations

import argparse
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("phases", type=Path, help="the file $FLASHINFER_BENCH_PHASES_FILE named")
    parser.add_argument("--apart", nargs="*", default=[], metavar="DEFINITION")
    parser.add_argument("--each", action="store_true", help="every evaluation of the definitions set apart too")
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


if __name__ == "__main__":
    main()
