import gc
import json
from pathlib import Path

import pytest
from helpers import SCALE_ADD, python_solution, scale_add_set, workload_line, write_trace_set

from flashinfer_bench.cli.main import main
from flashinfer_bench.data import Definition, EvaluationStatus, Trace, TraceSet, TraceSetError
from flashinfer_bench.data.workload_check import check_workload

REPO = Path(__file__).resolve().parents[2]


def test_example_trace_set_loads_with_every_part():
    trace_set = TraceSet.from_path(REPO / "examples" / "trace-set")
    op_types = {d.op_type for d in trace_set.definitions.values()}
    assert {"rmsnorm", "gemm", "gqa_paged", "sampling", "moe"} <= op_types
    for name in trace_set.definitions:
        languages = {s.spec.language.value for s in trace_set.solutions.get(name, [])}
        assert {"python", "triton"} <= languages, name
        assert len(trace_set.workloads.get(name, [])) >= 2, name


def test_unknown_fields_are_accepted_and_dropped_as_upstream_does():
    definition = dict(SCALE_ADD, future_field={"kept": True})
    model = Definition.model_validate(definition)
    assert "future_field" not in json.loads(model.model_dump_json())


def _problem(root: Path) -> TraceSetError:
    """The one problem loading ``root`` records (loading itself never raises for a bad file)."""
    trace_set = TraceSet.from_path(root)
    assert len(trace_set.problems) == 1, [str(p) for p in trace_set.problems]
    return trace_set.problems[0]


def test_bad_json_names_file_and_position_and_the_rest_still_loads(tmp_path):
    other = dict(SCALE_ADD, name="other")
    root = write_trace_set(tmp_path, [SCALE_ADD, other], [], {})
    bad = root / "definitions" / "elementwise" / "scale_add.json"
    bad.write_text('{"name": "scale_add",')
    trace_set = TraceSet.from_path(root)
    assert [p.path for p in trace_set.problems] == [str(bad)]
    assert "Invalid JSON" in str(trace_set.problems[0]) or "EOF" in str(trace_set.problems[0])
    assert list(trace_set.definitions) == ["other"]


def test_every_problem_is_reported_not_only_the_first(tmp_path):
    broken = [dict(SCALE_ADD, name=f"broken{i}", reference="def forward():\n    pass\n") for i in range(3)]
    root = write_trace_set(tmp_path, [SCALE_ADD, *broken], [], {})
    trace_set = TraceSet.from_path(root)
    assert len(trace_set.problems) == 3 and list(trace_set.definitions) == ["scale_add"]


def test_missing_field_is_named(tmp_path):
    definition = {k: v for k, v in SCALE_ADD.items() if k != "reference"}
    error = _problem(write_trace_set(tmp_path, [definition], [], {}))
    assert error.field == "reference"
    assert "required field is missing" in str(error)


def test_unknown_dtype(tmp_path):
    definition = json.loads(json.dumps(SCALE_ADD))
    definition["inputs"]["x"]["dtype"] = "float12"
    error = _problem(write_trace_set(tmp_path, [definition], [], {}))
    assert error.field == "inputs.x.dtype"
    assert "float32" in str(error)  # the expected values are listed


def test_shape_naming_undeclared_axis(tmp_path):
    definition = json.loads(json.dumps(SCALE_ADD))
    definition["outputs"]["out"]["shape"] = ["m"]
    error = _problem(write_trace_set(tmp_path, [definition], [], {}))
    assert "outputs.out.shape names axis 'm'" in str(error)


def test_duplicate_definition_names_both_files(tmp_path):
    other = dict(SCALE_ADD, op_type="other")
    root = write_trace_set(tmp_path, [SCALE_ADD, other], [], {})
    error = _problem(root)
    assert error.field == "name"
    assert "already used by" in str(error) and "elementwise" in str(error) and "other" in str(error)


def test_duplicate_solution_names(tmp_path):
    a = python_solution("same", "def run(x, y):\n    return x\n")
    b = dict(a)
    root = write_trace_set(tmp_path, [SCALE_ADD], [a], {})
    (root / "solutions" / "elsewhere").mkdir()
    (root / "solutions" / "elsewhere" / "same.json").write_text(json.dumps(b))
    assert "solution name 'same' is already used by" in str(_problem(root))


def test_solution_for_unknown_definition(tmp_path):
    solution = python_solution("s", "def run(x, y):\n    return x\n", definition="nope")
    error = _problem(write_trace_set(tmp_path, [SCALE_ADD], [solution], {}))
    assert error.field == "definition" and "unknown definition 'nope'" in str(error)


def test_workload_lines_are_checked_one_by_one(tmp_path):
    lines = [workload_line("scale_add", "u1", {"n": 4}), "{not json\n", workload_line("scale_add", "u1", {"n": 5}),
             workload_line("nope", "u2", {"n": 4}), workload_line("scale_add", "u3", {"n": -1})]
    root = write_trace_set(tmp_path, [SCALE_ADD], [], {"scale_add": lines})
    trace_set = TraceSet.from_path(root)
    assert [w.workload.uuid for w in trace_set.workloads["scale_add"]] == ["u1"]
    assert [p.path.rsplit(":", 1)[1] for p in trace_set.problems] == ["2", "3", "4", "5"]
    assert "repeats" in str(trace_set.problems[1]) and "unknown definition 'nope'" in str(trace_set.problems[2])
    assert "greater than or equal to 0" in str(trace_set.problems[3])


def test_axis_values_are_read_as_upstream_reads_them(tmp_path):
    lines = [workload_line("scale_add", "a", {"n": 4.0}), workload_line("scale_add", "b", {"n": "6"}),
             workload_line("scale_add", "c", {"n": 4.5})]
    trace_set = TraceSet.from_path(write_trace_set(tmp_path, [SCALE_ADD], [], {"scale_add": lines}))
    assert [w.workload.axes["n"] for w in trace_set.workloads["scale_add"]] == [4, 6]
    assert len(trace_set.problems) == 1 and "workload.axes.n" in str(trace_set.problems[0])


@pytest.mark.parametrize(
    ("axes", "inputs", "message"),
    [
        ({}, {}, "does not bind var axes ['n']"),
        ({"n": 4, "k": 2}, {}, "does not declare"),
        ({"n": 4}, {"z": {"type": "random"}}, "has no input 'z'"),
        ({"n": 4}, {"x": {"type": "scalar", "value": 1.0}}, "scalar value was given for a tensor input"),
        ({"n": 4}, {"x": {"type": "safetensors", "path": "blob/none.safetensors", "tensor_key": "x"}}, "does not exist"),
        ({"n": 4}, {"x": {"type": "safetensors", "path": "../outside.safetensors", "tensor_key": "x"}}, "stay inside"),
    ],
)
def test_a_workload_that_cannot_run_loads_and_its_check_says_why(tmp_path, axes, inputs, message):
    root = write_trace_set(tmp_path, [SCALE_ADD], [], {"scale_add": [workload_line("scale_add", "u1", axes, inputs)]})
    trace_set = TraceSet.from_path(root)
    assert trace_set.problems == []
    workload = trace_set.workloads["scale_add"][0].workload
    problems = check_workload(trace_set.definitions["scale_add"], workload, root)
    assert any(message in str(p) for p in problems), [str(p) for p in problems]


def test_constraint_checked_against_workload(tmp_path):
    definition = dict(SCALE_ADD, constraints=["n % 4 == 0"])
    root = write_trace_set(tmp_path, [definition], [], {"scale_add": [workload_line("scale_add", "u", {"n": 6})]})
    trace_set = TraceSet.from_path(root)
    problems = check_workload(trace_set.definitions["scale_add"], trace_set.workloads["scale_add"][0].workload, root)
    assert [str(p) for p in problems] == ["constraints: constraint 'n % 4 == 0' is false (n % 4 = 2)"]


def test_entry_point_and_source_paths_are_checked(tmp_path):
    solution = python_solution("s", "x = 1\n")
    solution["spec"]["entry_point"] = "main.py:run"
    assert "entry_point" in str(_problem(write_trace_set(tmp_path / "a", [SCALE_ADD], [solution], {})))
    solution = python_solution("s", "x = 1\n")
    solution["sources"][0]["path"] = "../escape.py"
    solution["spec"]["entry_point"] = "../escape.py::run"
    assert "stay inside the solution" in str(_problem(write_trace_set(tmp_path / "b", [SCALE_ADD], [solution], {})))


def test_reference_must_define_run(tmp_path):
    definition = dict(SCALE_ADD, reference="def forward(x, y):\n    return x\n")
    assert "top-level function run" in str(_problem(write_trace_set(tmp_path, [definition], [], {})))


def test_torn_last_trace_line_is_skipped_and_appending_closes_it(tmp_path):
    root = scale_add_set(tmp_path, {})
    trace_file = root / "traces" / "unknown" / "elementwise" / "scale_add.jsonl"
    trace_file.parent.mkdir(parents=True)
    good = {
        "definition": "scale_add", "solution": "s", "workload": {"uuid": "w8", "axes": {"n": 8}, "inputs": {}},
        "evaluation": {"status": "RUNTIME_ERROR", "environment": {"hardware": "cpu", "libs": {}}, "timestamp": "t",
                       "log": "", "correctness": None, "performance": None},
    }
    trace_file.write_text(json.dumps(good) + "\n" + json.dumps(good)[:40])
    trace_set = TraceSet.from_path(root)
    assert len(trace_set.traces["scale_add"]) == 1
    trace_set.add_trace(Trace.model_validate(good), persist=True)
    lines = trace_file.read_text().splitlines()
    assert len(lines) == 3 and json.loads(lines[2])["evaluation"]["status"] == EvaluationStatus.RUNTIME_ERROR.value
    assert len(TraceSet.from_path(root).traces["scale_add"]) == 2  # the torn line stays in the middle, untouched


def _result_line(uuid: str, n: int, solution: str = "s", definition: str = "scale_add") -> str:
    return json.dumps({
        "definition": definition, "solution": solution,
        "workload": {"uuid": uuid, "axes": {"n": n}, "inputs": {"x": {"type": "random"}}},
        "evaluation": {"status": "RUNTIME_ERROR", "environment": {"hardware": "cpu", "libs": {"torch": "2"}},
                       "timestamp": "t", "log": "", "correctness": None, "performance": None},
    }) + "\n"


def test_repeated_workloads_and_environments_are_held_once_and_different_ones_are_kept(tmp_path):
    root = scale_add_set(tmp_path, {})
    trace_file = root / "traces" / "a" / "elementwise" / "scale_add.jsonl"
    trace_file.parent.mkdir(parents=True)
    trace_file.write_text(_result_line("w", 8, "s1") + _result_line("w", 8, "s2") + _result_line("w", 9, "s3"))
    was_enabled = gc.isenabled()
    traces = TraceSet.from_path(root).traces["scale_add"]
    assert gc.isenabled() == was_enabled
    assert traces[0].workload is traces[1].workload and traces[2].workload.axes == {"n": 9}
    assert traces[0].evaluation.environment is traces[2].evaluation.environment


def test_bad_result_lines_are_skipped_with_a_warning_and_do_not_fail_a_summary(tmp_path, capsys):
    root = scale_add_set(tmp_path, {})
    trace_file = root / "traces" / "a" / "elementwise" / "scale_add.jsonl"
    trace_file.parent.mkdir(parents=True)
    valid_json_bad_trace = json.dumps({"definition": "scale_add", "solution": "s", "workload": {}})
    trace_file.write_text(_result_line("w", 8) + valid_json_bad_trace + "\n" + _result_line("w", 8, definition="gone"))
    trace_set = TraceSet.from_path(root)
    assert len(trace_set.traces["scale_add"]) == 1 and trace_set.problems == []
    assert [p.path.rsplit(":", 1)[1] for p in trace_set.trace_problems] == ["2", "3"]
    assert main(["report", "summary", "--local", str(root)]) == 0
    assert capsys.readouterr().err.count("warning: skipped a result line") == 2
