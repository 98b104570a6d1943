"""The trace-set file format: definitions, solutions, workloads and traces, as pydantic models."""

from flashinfer_bench.data.definition import Axis, ConstAxis, Definition, TensorSpec, VarAxis
from flashinfer_bench.data.dtypes import DType, OpenDType
from flashinfer_bench.data.errors import TraceSetError
from flashinfer_bench.data.json_files import (
    append_jsonl_file,
    load_json_file,
    load_jsonl_file,
    save_json_file,
    save_jsonl_file,
)
from flashinfer_bench.data.solution import Binding, BuildSpec, Language, Solution, SourceFile
from flashinfer_bench.data.trace import (
    Correctness,
    Environment,
    Evaluation,
    EvaluationStatus,
    Performance,
    Trace,
)
from flashinfer_bench.data.trace_set import TraceSet
from flashinfer_bench.data.workload import InputSpec, RandomInput, SafetensorsInput, ScalarInput, Workload

# Upstream's names for the same models, so code written against upstream's package imports unchanged.
AxisConst = ConstAxis
AxisVar = VarAxis
AxisSpec = Axis
SupportedLanguages = Language
SupportedBindings = Binding

__all__ = [
    "Axis",
    "AxisConst",
    "AxisSpec",
    "AxisVar",
    "Binding",
    "BuildSpec",
    "ConstAxis",
    "Correctness",
    "DType",
    "Definition",
    "Environment",
    "Evaluation",
    "EvaluationStatus",
    "Language",
    "InputSpec",
    "OpenDType",
    "Performance",
    "RandomInput",
    "SafetensorsInput",
    "ScalarInput",
    "Solution",
    "SourceFile",
    "SupportedBindings",
    "SupportedLanguages",
    "TensorSpec",
    "Trace",
    "TraceSet",
    "TraceSetError",
    "VarAxis",
    "Workload",
    "append_jsonl_file",
    "load_json_file",
    "load_jsonl_file",
    "save_json_file",
    "save_jsonl_file",
]
