"""The trace-set file format: definitions, solutions, workloads and traces, as pydantic models."""

from flashinfer_bench.data.definition import ConstAxis, Definition, TensorSpec, VarAxis
from flashinfer_bench.data.dtypes import DType
from flashinfer_bench.data.errors import TraceSetError
from flashinfer_bench.data.solution import BuildSpec, Language, Solution, SourceFile
from flashinfer_bench.data.trace import (
    Correctness,
    Environment,
    Evaluation,
    EvaluationStatus,
    Performance,
    Trace,
)
from flashinfer_bench.data.trace_set import TraceSet
from flashinfer_bench.data.workload import RandomInput, SafetensorsInput, ScalarInput, Workload

__all__ = [
    "BuildSpec",
    "ConstAxis",
    "Correctness",
    "DType",
    "Definition",
    "Environment",
    "Evaluation",
    "EvaluationStatus",
    "Language",
    "Performance",
    "RandomInput",
    "SafetensorsInput",
    "ScalarInput",
    "Solution",
    "SourceFile",
    "TensorSpec",
    "Trace",
    "TraceSet",
    "TraceSetError",
    "VarAxis",
    "Workload",
]
