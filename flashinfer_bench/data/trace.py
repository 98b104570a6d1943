"""Trace: a workload, and (for a result trace) the solution that ran on it and how that went."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any

from pydantic import (
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from flashinfer_bench.data.definition import NonEmptyStr, _Model
from flashinfer_bench.data.names import Name
from flashinfer_bench.data.workload import Workload


class EvaluationStatus(str, Enum):
    PASSED = "PASSED"
    INCORRECT_SHAPE = "INCORRECT_SHAPE"
    INCORRECT_NUMERICAL = "INCORRECT_NUMERICAL"
    INCORRECT_DTYPE = "INCORRECT_DTYPE"
    RUNTIME_ERROR = "RUNTIME_ERROR"
    COMPILE_ERROR = "COMPILE_ERROR"
    TIMEOUT = "TIMEOUT"


def timestamp_now() -> str:
    """An evaluation's timestamp as upstream writes it: local time, ISO 8601, no zone."""
    return datetime.now().isoformat()


class Environment(_Model):
    hardware: NonEmptyStr
    libs: dict[str, str] = Field(default_factory=dict)


class Correctness(_Model):
    """Worst errors seen. Infinity and NaN are legitimate values (a NaN output); like upstream they are written
    as the strings ``"Infinity"`` and ``"NaN"``, which strict JSON readers accept, and read back as floats."""

    model_config = ConfigDict(ser_json_inf_nan="strings")

    max_relative_error: float = 0.0
    max_absolute_error: float = 0.0
    extra: dict[str, Any] | None = None

    @field_validator("max_relative_error", "max_absolute_error")
    @classmethod
    def _non_negative_or_nan(cls, value: float) -> float:
        if value < 0:
            raise ValueError("must be non-negative or NaN")
        return value


class Performance(_Model):
    """Latencies in ms. ``speedup_factor`` is reference / solution latency, 0.0 when the reference was not
    timed (``profile_baseline: false``), as upstream writes it."""

    latency_ms: float = Field(default=0.0, ge=0.0)
    reference_latency_ms: float = Field(default=0.0, ge=0.0)
    speedup_factor: float = Field(default=0.0, ge=0.0)
    #: Ours, optional: how the latencies were measured and how noisy they were (keys: data/performance_extra.py).
    #: Written only when set, so lines without it are upstream's byte for byte; upstream's reader drops it.
    extra: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _extra_counts_as_given(self) -> Performance:
        # The loader shares one field-name set between models given every field (TraceSet._SharedParts);
        # upstream's lines never give ``extra``, and their 3-name sets would otherwise be held once per line.
        self.__pydantic_fields_set__.add("extra")
        return self

    @model_serializer(mode="wrap")
    def _leave_out_absent_extra(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if data.get("extra") is None:
            data.pop("extra", None)
        return data


class Evaluation(_Model):
    status: EvaluationStatus
    environment: Environment
    #: ISO 8601; see :func:`timestamp_now`.
    timestamp: NonEmptyStr
    log: str = ""
    correctness: Correctness | None = None
    performance: Performance | None = None

    @model_validator(mode="after")
    def _fields_match_status(self) -> Evaluation:
        """Upstream's rule: PASSED has correctness and performance, INCORRECT_NUMERICAL correctness only,
        every other status neither."""
        wants_correctness = self.status in (EvaluationStatus.PASSED, EvaluationStatus.INCORRECT_NUMERICAL)
        wants_performance = self.status is EvaluationStatus.PASSED
        for name, wanted, value in (("correctness", wants_correctness, self.correctness),
                                    ("performance", wants_performance, self.performance)):
            if wanted and value is None:
                raise ValueError(f"a {self.status.value} evaluation must include {name}")
            if not wanted and value is not None:
                raise ValueError(f"a {self.status.value} evaluation must not include {name}")
        return self


class Trace(_Model):
    """A workload trace (``solution`` and ``evaluation`` null) or a result trace (both set)."""

    definition: Name
    workload: Workload
    solution: Name | None = None
    evaluation: Evaluation | None = None

    @property
    def is_workload_trace(self) -> bool:
        return self.solution is None and self.evaluation is None

    def to_json_line(self) -> str:
        return self.model_dump_json(exclude_unset=False) + "\n"
