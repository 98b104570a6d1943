"""Each evaluation's phases (``EvaluationPhases``, measured by its judge), one JSON line per verdict appended to
the file ``$FLASHINFER_BENCH_PHASES_FILE`` names; nothing when it is unset. benchmarks/run_costs.py reads it."""

from __future__ import annotations

import json
import os
from dataclasses import asdict

from flashinfer_bench.bench.runner.base import Verdict

PHASES_FILE_ENV = "FLASHINFER_BENCH_PHASES_FILE"


def log_phases(verdict: Verdict) -> None:
    path = os.environ.get(PHASES_FILE_ENV)
    phases = verdict.outcome.phases
    if not path or phases is None:
        return
    item = verdict.item
    line = json.dumps({"definition": item.definition.name, "solution": item.solution.name,
                       "workload": item.workload.uuid, "status": verdict.outcome.status.value, **asdict(phases)})
    with open(path, "a", encoding="utf-8") as log:
        log.write(line + "\n")
