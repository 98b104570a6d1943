"""The public FlashInfer-Trace format as upstream reads and writes it, checked on the real dataset and on
trace lines written by upstream's own tool (../shared/corpus, beside the checkout)."""

import json
import math
import subprocess
import sys

import pytest
from helpers import REPO, SCALE_ADD, child_env, python_solution
from pydantic import ValidationError

from flashinfer_bench.data import Correctness, Evaluation, Performance, Solution, Trace, TraceSet, Workload
from flashinfer_bench.data.jsonl import jsonl_lines

CORPUS = REPO.parent / "shared" / "corpus"
DATASET = CORPUS / "flashinfer-trace"
UPSTREAM_RUNS = sorted((CORPUS / "upstream-traces").glob("run-*"))
needs_corpus = pytest.mark.skipif(not DATASET.is_dir(), reason=f"the shared corpus is not at {CORPUS}")

ENVIRONMENT = {"hardware": "cpu", "libs": {}}


def _upstream_lines() -> list[bytes]:
    return [line for run in UPSTREAM_RUNS for file in sorted(run.rglob("*.jsonl"))
            for _, line in jsonl_lines(file.read_bytes())]


@needs_corpus
def test_the_whole_dataset_loads():
    trace_set = TraceSet.from_path(DATASET)
    assert len(trace_set.definitions) == 156
    assert sum(len(w) for w in trace_set.workloads.values()) == 663
    assert trace_set.problems == []
    assert {d.op_type for d in trace_set.definitions.values()} == {
        "dsa_paged", "gdn", "gemm", "gqa_paged", "gqa_ragged", "mamba_ssu", "mla_paged", "mla_ragged", "moe",
        "rmsnorm", "rope", "sampling"}


@needs_corpus
def test_upstream_trace_lines_come_back_byte_identical():
    lines = _upstream_lines()
    assert len(lines) == 242
    assert [Trace.model_validate_json(line).to_json_line().encode() for line in lines] == [line + b"\n" for line in lines]


@needs_corpus
def test_report_merge_writes_upstream_lines_back_byte_identical(tmp_path):
    out = tmp_path / "merged"
    command = [sys.executable, "-m", "flashinfer_bench.cli.main", "report", "merge", "--local", str(DATASET),
               *[str(run) for run in UPSTREAM_RUNS], "--output", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=child_env())
    assert done.returncode == 0, done.stderr
    assert "156 definitions" in done.stdout and "663 workloads" in done.stdout and "242 traces" in done.stdout
    written = {line for file in (out / "traces").rglob("*.jsonl") for _, line in jsonl_lines(file.read_bytes())}
    assert set(_upstream_lines()) == written
    assert TraceSet.from_path(out).problems == []
    again = subprocess.run(command, capture_output=True, text=True, timeout=300, env=child_env())
    assert again.returncode == 2 and "must be a new or empty folder" in again.stderr  # nothing is overwritten


def _evaluation(**fields):
    return {"status": "PASSED", "environment": ENVIRONMENT, "timestamp": "2026-11-23T10:00:00", "log": "",
            "correctness": {}, "performance": {}, **fields}


def test_non_finite_errors_are_strings_that_strict_json_reads_and_come_back():
    evaluation = Evaluation.model_validate(_evaluation(
        status="INCORRECT_NUMERICAL", performance=None,
        correctness={"max_relative_error": math.nan, "max_absolute_error": math.inf}))
    text = evaluation.model_dump_json()
    assert '"max_relative_error":"NaN","max_absolute_error":"Infinity"' in text
    strict = json.loads(text, parse_constant=lambda name: pytest.fail(f"bare {name} in JSON"))
    back = Evaluation.model_validate(strict).correctness
    assert math.isnan(back.max_relative_error) and back.max_absolute_error == math.inf


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"status": "PASSED", "performance": None}, "must include performance"),
        ({"status": "PASSED", "correctness": None}, "must include correctness"),
        ({"status": "INCORRECT_NUMERICAL"}, "must not include performance"),
        ({"status": "RUNTIME_ERROR", "performance": None}, "must not include correctness"),
        ({"performance": {"latency_ms": -1.0}}, "greater than or equal to 0"),
        ({"correctness": {"max_absolute_error": -0.5}}, "non-negative or NaN"),
        ({"timestamp": ""}, "at least 1 character"),
    ],
)
def test_what_upstream_rejects_is_rejected(fields, message):
    with pytest.raises(ValidationError, match=message):
        Evaluation.model_validate(_evaluation(**fields))
    no_timestamp = {k: v for k, v in _evaluation().items() if k != "timestamp"}
    with pytest.raises(ValidationError, match="timestamp"):
        Evaluation.model_validate(no_timestamp)


def test_what_upstream_accepts_is_accepted():
    evaluation = Evaluation.model_validate(_evaluation(correctness={}, performance={}))
    assert evaluation.correctness.max_relative_error == 0.0 and evaluation.performance.speedup_factor == 0.0
    workload = Workload.model_validate({"axes": {"a": 4.0, "b": "5"}, "inputs": {"x": {}, "s": {"value": 2}},
                                        "uuid": "u"})
    assert workload.axes == {"a": 4, "b": 5}
    assert [type(v).__name__ for v in workload.inputs.values()] == ["RandomInput", "ScalarInput"]
    definition = dict(SCALE_ADD, axes={"n": {}, "k": {"value": 3}})
    from flashinfer_bench.data import Definition

    axes = Definition.model_validate(definition).axes
    assert (axes["n"].type, axes["k"].type, axes["k"].value) == ("var", "const", 3)
    solution = python_solution("s", "def run(x, y):\n    return x\n")
    solution["spec"]["entry_point"] = "main.py::"  # upstream loads it; building it fails later
    assert Solution.model_validate(solution).spec.entry_point == "main.py::"


def test_written_key_order_is_upstreams():
    trace = Trace.model_validate({"definition": "d", "solution": None, "evaluation": None,
                                  "workload": {"uuid": "u", "inputs": {}, "axes": {"n": 1}}})
    assert trace.to_json_line() == '{"definition":"d","workload":{"axes":{"n":1},"inputs":{},"uuid":"u"},"solution":null,"evaluation":null}\n'
    solution = Solution.model_validate(dict(python_solution("s", "x = 1\n"), description="last"))
    assert list(json.loads(solution.model_dump_json())) == ["name", "definition", "author", "spec", "sources",
                                                            "description"]
    assert Performance().model_dump() == {"latency_ms": 0.0, "reference_latency_ms": 0.0, "speedup_factor": 0.0}
    assert Correctness().model_dump_json() == '{"max_relative_error":0.0,"max_absolute_error":0.0,"extra":null}'


def test_a_line_separator_inside_a_string_does_not_split_a_record(tmp_path):
    records = [b'{"log":"a\xe2\x80\xa8b"}', b'{"log":"c\xc2\x85d"}']
    assert [line for _, line in jsonl_lines(b"\n".join(records) + b"\n\n")] == records
