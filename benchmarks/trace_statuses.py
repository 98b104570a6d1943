"""Prints the status of every (definition, solution, workload) traced in a trace set, one line each, sorted, and
a count per status: two runs (CPU and GPU, two runners, before and after a change) compare with `diff`.

    python benchmarks/trace_statuses.py PATH
"""

from __future__ import annotations

import sys
from collections import Counter

from flashinfer_bench.data import TraceSet


def main() -> None:
    trace_set = TraceSet.from_path(sys.argv[1])
    lines = sorted(f"{t.definition} {t.solution} {t.workload.uuid} {t.evaluation.status.value}"
                   for traces in trace_set.traces.values() for t in traces if t.evaluation is not None)
    print("\n".join(lines))
    counts = Counter(line.rsplit(" ", 1)[1] for line in lines)
    print("statuses:", ", ".join(f"{status} {count}" for status, count in sorted(counts.items())))


if __name__ == "__main__":
    main()
