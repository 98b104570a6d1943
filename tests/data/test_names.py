"""Names read from files (data/names.py) and the trusted writers that make paths of them (data/layout.py): a
hostile name is one problem line, and nothing is written outside the trace set or the merge target."""

import json
from pathlib import Path

import pytest
from helpers import REPO, SCALE_ADD, python_solution, scale_add_set
from pydantic import ValidationError

from flashinfer_bench.cli.main import main
from flashinfer_bench.data import Solution, SourceFile, Trace, TraceSet, TraceSetError, layout
from flashinfer_bench.data.names import MAX_NAME_BYTES, NAME_RULE, check_name, name_problem

CORPUS = REPO.parent / "shared" / "corpus"
OK = "def run(x, y):\n    return x * 2 + y\n"
FAST = ["--iterations", "2", "--warmup-runs", "1", "--num-trials", "1"]

BAD_NAMES = ["", ".", "..", "../workloads", "/etc", "a/b", "a\\b", "a\x00b", "a\nb", "\x1b[2J", "tab\there",
             "right\u202eto-left", "line\u2028break", "x" * (MAX_NAME_BYTES + 1), "é" * (MAX_NAME_BYTES // 2 + 1)]


def _files(root: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in root.rglob("*") if path.is_file()}


@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_bad_name_is_refused_with_what_a_name_must_be(name):
    assert name_problem(name) is not None
    with pytest.raises(ValueError, match="a name is one path component"):
        check_name(name)


@pytest.mark.parametrize("name", ["rmsnorm_h4096", "Qwen3.5-27B_dsa_topk", "gpt-5.2_gemm", "my kernel", "Zoë",
                                  "作者", "[red]x", "..hidden", ".config", "x" * MAX_NAME_BYTES])
def test_names_that_are_no_path_trick_are_kept(name):
    assert check_name(name) == name


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the shared corpus is not at {CORPUS}")
def test_every_name_of_the_real_data_is_a_name():
    """The public dataset, FlashInfer's own dumps (whose other fields do not all load yet) and upstream's traces."""
    names = set()
    for path in CORPUS.rglob("*.json"):
        document = json.loads(path.read_text())
        names.update(document[field] for field in ("name", "op_type", "author", "definition") if field in document)
    for path in CORPUS.rglob("*.jsonl"):
        for line in path.read_text().splitlines():
            trace = json.loads(line)
            names.update(filter(None, (trace["definition"], trace.get("solution"))))
    assert len(names) > 250
    assert {name: name_problem(name) for name in names if name_problem(name)} == {}


@pytest.mark.parametrize("path", ["main.py", "kernels/scale_add.cu", "a.b/c-d/e_f.h"])
def test_source_paths_that_are_normalised_and_relative_load(path):
    assert SourceFile(path=path, content="x").path == path


@pytest.mark.parametrize("path", ["/etc/passwd", "../main.py", "a/../../b.py", "./main.py", "a//b.py", "a/",
                                  "..\\main.py", "a\x00.py", "a\n.py"])
def test_source_paths_that_could_leave_the_folder_or_name_another_file_are_refused(path):
    with pytest.raises(ValidationError, match="source path must be relative, normalised and stay inside"):
        SourceFile(path=path, content="x")


@pytest.mark.parametrize(("kind", "field", "value"), [
    ("solution", "author", "../workloads"),
    ("solution", "author", "/tmp/elsewhere"),
    ("solution", "name", "../../escape"),
    ("solution", "definition", "../scale_add"),
    ("definition", "name", "../other"),
    ("definition", "op_type", ".."),
])
def test_a_bad_name_in_a_file_is_one_problem_naming_file_and_field_and_the_rest_loads(tmp_path, kind, field, value):
    root = scale_add_set(tmp_path, {"honest": OK})
    if kind == "solution":
        bad = root / "solutions" / "bad.json"
        bad.write_text(json.dumps({**python_solution("hostile", OK), field: value}))
    else:
        bad = root / "definitions" / "bad.json"
        bad.write_text(json.dumps({**SCALE_ADD, "name": "other", field: value}))
    trace_set = TraceSet.from_path(root)
    assert [(p.path, p.field) for p in trace_set.problems] == [(str(bad), field)]
    assert "a name is one path component" in str(trace_set.problems[0])
    assert [s.name for s in trace_set.solutions["scale_add"]] == ["honest"]
    assert list(trace_set.definitions) == ["scale_add"]


def test_a_bad_name_in_a_result_line_skips_that_line_only(tmp_path):
    root = scale_add_set(tmp_path, {"honest": OK})
    evaluation = {"status": "RUNTIME_ERROR", "environment": {"hardware": "cpu"}, "timestamp": "t"}
    lines = [{"definition": "scale_add", "solution": solution, "evaluation": evaluation,
              "workload": {"uuid": "w8", "axes": {"n": 8}, "inputs": {}}} for solution in ("honest", "a/../b")]
    trace_file = root / "traces" / "tests" / "elementwise" / "scale_add.jsonl"
    trace_file.parent.mkdir(parents=True)
    trace_file.write_text("".join(json.dumps(line) + "\n" for line in lines))
    trace_set = TraceSet.from_path(root)
    assert [t.solution for t in trace_set.traces["scale_add"]] == ["honest"]
    assert [(p.path, p.field) for p in trace_set.trace_problems] == [(f"{trace_file}:2", "solution")]


@pytest.mark.parametrize(("field", "value"), [("author", "../workloads"), ("author", "ABSOLUTE"),
                                              ("name", "../../escape")])
def test_run_with_a_hostile_name_runs_the_rest_and_writes_nothing_outside_the_trace_set(tmp_path, capsys, field,
                                                                                         value):
    outside = tmp_path / "outside"
    value = str(outside / "x") if value == "ABSOLUTE" else value
    root = scale_add_set(tmp_path / "set", {"honest": OK}, sizes=(8,))
    (root / "solutions" / "hostile.json").write_text(json.dumps({**python_solution("hostile", OK), field: value}))
    before = _files(tmp_path)
    assert main(["run", "--local", str(root), *FAST]) == 2
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if line.startswith("error: ") and "hostile.json" in line] == [
        f"error: {root / 'solutions' / 'hostile.json'}: field '{field}': Value error, {name_problem(value)}; "
        f"{NAME_RULE}"]
    assert "scale_add / honest / w8: PASSED" in err
    after = _files(tmp_path)
    written = {path for path in after if before.get(path) != after[path]}
    assert written == {root / "traces" / "tests" / "elementwise" / "scale_add.jsonl"}
    assert not outside.exists() and set(before) <= set(after)


def test_the_trace_writer_refuses_a_path_outside_the_trace_set_even_for_an_unchecked_name(tmp_path):
    root = scale_add_set(tmp_path / "set", {"honest": OK}, sizes=(8,))
    trace_set = TraceSet.from_path(root)
    honest = trace_set.solutions["scale_add"][0]
    # Built without validation, as code that bypassed the loader would: the writer's own check still holds.
    forged = Solution.model_construct(**{**dict(honest), "name": "forged", "author": "../workloads"})
    trace_set.solutions["scale_add"].append(forged)
    evaluation = {"status": "RUNTIME_ERROR", "environment": {"hardware": "cpu"}, "timestamp": "t"}
    trace = Trace.model_validate({"definition": "scale_add", "solution": "forged", "evaluation": evaluation,
                                  "workload": {"uuid": "w8", "axes": {"n": 8}, "inputs": {}}})
    before = _files(tmp_path)
    with pytest.raises(TraceSetError) as raised:
        trace_set.add_trace(trace, persist=True)
    assert raised.value.field == "author" and "path separator" in str(raised.value)
    assert _files(tmp_path) == before and trace_set.traces == {}


@pytest.mark.parametrize("call", [
    lambda root: layout.solution_file(root, "tests", "elementwise", "scale_add", "../../../victim"),
    lambda root: layout.trace_file(root, "/abs", "elementwise", "scale_add"),
    lambda root: layout.definition_file(root, "..", "scale_add"),
    lambda root: layout.moved(root, layout.TRACES, ("..", "x.jsonl")),
    lambda root: layout.inside(root, root / ".." / "victim.json"),
    lambda root: layout.inside(root, root),
])
def test_every_layout_path_is_inside_its_root_or_refused(tmp_path, call):
    with pytest.raises(TraceSetError, match="nothing was written|no path is made"):
        call(tmp_path / "root")


def test_layout_paths_are_where_upstream_puts_them(tmp_path):
    assert layout.solution_file(tmp_path, "a", "gemm", "g1", "s") == tmp_path / "solutions/a/gemm/g1/s.json"
    assert layout.trace_file(tmp_path, "a", "gemm", "g1") == tmp_path / "traces/a/gemm/g1.jsonl"
    assert layout.workload_file(tmp_path, "gemm", "g1") == tmp_path / "workloads/gemm/g1.jsonl"
    assert layout.definition_file(tmp_path, "gemm", "g1") == tmp_path / "definitions/gemm/g1.json"
    assert layout.workload_blob("gemm", "g1", "w") == "blob/workloads/gemm/g1/w.safetensors"


def test_merge_cannot_be_made_to_overwrite_another_trace_sets_file(tmp_path, capsys):
    victim = scale_add_set(tmp_path / "victim", {"honest": OK}, sizes=(8,))
    source = scale_add_set(tmp_path / "source", {"mine": OK}, sizes=(8,))
    target = layout.solution_file(victim, "tests", "elementwise", "scale_add", "honest")
    out = tmp_path / "out"
    # From out/solutions/tests/elementwise/scale_add/, five levels up is tmp_path.
    hostile = {**python_solution("../../../../../victim/solutions/tests/elementwise/scale_add/honest", "x = 1\n")}
    (source / "solutions" / "hostile.json").write_text(json.dumps(hostile))
    odd = source / "traces" / "odd\nname.jsonl"
    odd.parent.mkdir()
    odd.write_text("")
    before = _files(tmp_path)
    assert main(["report", "merge", "--local", str(source), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"error: {source / 'solutions' / 'hostile.json'}: field 'name'" in err
    assert f"error: {odd}: field 'traces/ path'" in err and "the file was left out" in err
    after = _files(tmp_path)
    assert target.read_bytes() == before[target]
    assert {path for path in after if before.get(path) != after[path]} == {
        layout.definition_file(out, "elementwise", "scale_add"),
        layout.solution_file(out, "tests", "elementwise", "scale_add", "mine"),
        layout.workload_file(out, "elementwise", "scale_add")}

