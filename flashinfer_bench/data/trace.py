"""Trace: a workload, and (for a result trace) the solution that ran on it and how that went."""

from __future__ import annotations

from datetime import datetime, timezone
from enum import Enum
from typing import Any

from pydantic import Field

from flashinfer_bench.data.definition import NonEmptyStr, _Model
from flashinfer_bench.data.workload import Workload


class EvaluationStatus(str, Enum):
    PASSED = "PASSED"
    INCORRECT_SHAPE = "INCORRECT_SHAPE"
    INCORRECT_NUMERICAL = "INCORRECT_NUMERICAL"
    INCORRECT_DTYPE = "INCORRECT_DTYPE"
    RUNTIME_ERROR = "RUNTIME_ERROR"
    COMPILE_ERROR = "COMPILE_ERROR"
    TIMEOUT = "TIMEOUT"


class Environment(_Model):
    hardware: str
    libs: dict[str, str] = Field(default_factory=dict)


class Correctness(_Model):
    """Worst errors seen; Infinity and NaN are legitimate values (a NaN output) and are written as JSON constants."""

    max_relative_error: float
    max_absolute_error: float
    extra: dict[str, Any] | None = None


class Performance(_Model):
    latency_ms: float
    reference_latency_ms: float
    speedup_factor: float


class Evaluation(_Model):
    status: EvaluationStatus
    environment: Environment
    timestamp: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat())
    log: str = ""
    correctness: Correctness | None = None
    performance: Performance | None = None


class Trace(_Model):
    """A workload trace (``solution`` and ``evaluation`` null) or a result trace (both set)."""

    definition: NonEmptyStr
    workload: Workload
    solution: str | None = None
    evaluation: Evaluation | None = None

    @property
    def is_workload_trace(self) -> bool:
        return self.solution is None and self.evaluation is None

    def to_json_line(self) -> str:
        return self.model_dump_json(exclude_unset=False) + "\n"
