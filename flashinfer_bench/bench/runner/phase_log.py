"""Each verdict with its evaluation's phases (``EvaluationPhases``, measured by its judge; null for a verdict no
judge made: a timeout, a dead worker, a workload refused before the run), one JSON line per verdict appended to
the file ``$FLASHINFER_BENCH_PHASES_FILE`` names; nothing when it is unset. benchmarks/run_costs.py reads it."""

from __future__ import annotations

import json
import os
from dataclasses import asdict

from flashinfer_bench.bench.runner.base import Verdict

PHASES_FILE_ENV = "FLASHINFER_BENCH_PHASES_FILE"


def log_phases(verdict: Verdict) -> None:
    path = os.environ.get(PHASES_FILE_ENV)
    if not path:
        return
    item, phases = verdict.item, verdict.outcome.phases
    line = json.dumps({"definition": item.definition.name, "solution": item.solution.name,
                       "workload": item.workload.uuid, "status": verdict.outcome.status.value,
                       "phases": asdict(phases) if phases is not None else None})
    with open(path, "a", encoding="utf-8") as log:
        log.write(line + "\n")
