"""Upstream's public names in flashinfer_bench.data (and LowBitEvaluator): scripts written against upstream's
package import them unchanged, and the JSON helpers round-trip real models, with errors that name the file."""

import pytest
from helpers import SCALE_ADD, python_solution

from flashinfer_bench.data import (
    AxisConst,
    AxisVar,
    Definition,
    Solution,
    SupportedLanguages,
    Trace,
    TraceSetError,
    append_jsonl_file,
    load_json_file,
    load_jsonl_file,
    save_json_file,
    save_jsonl_file,
)


def test_upstream_names_import():
    from flashinfer_bench.bench.evaluators import LowBitEvaluator, LowbitEvaluator

    assert LowBitEvaluator is LowbitEvaluator
    assert AxisConst(value=4).value == 4 and AxisVar().type == "var"
    assert SupportedLanguages("python").value == "python"


def test_json_and_jsonl_round_trip(tmp_path):
    definition = Definition.model_validate(SCALE_ADD)
    save_json_file(definition, tmp_path / "new" / "d.json")  # folders made as needed
    assert load_json_file(Definition, tmp_path / "new" / "d.json") == definition
    assert (tmp_path / "new" / "d.json").read_text().startswith('{\n  "name": "scale_add"')

    workload = {"definition": "scale_add", "solution": None, "evaluation": None,
                "workload": {"uuid": "w1", "axes": {"n": 4}, "inputs": {}}}
    traces = [Trace.model_validate(workload), Trace.model_validate(dict(workload, workload={**workload["workload"],
                                                                                       "uuid": "w2"}))]
    save_jsonl_file(traces, tmp_path / "t.jsonl")
    append_jsonl_file(traces[:1], tmp_path / "t.jsonl")
    (tmp_path / "t.jsonl").write_text((tmp_path / "t.jsonl").read_text() + "\n")  # an empty line is skipped
    loaded = load_jsonl_file(Trace, tmp_path / "t.jsonl")
    assert [t.workload.uuid for t in loaded] == ["w1", "w2", "w1"]
    save_jsonl_file(traces[1:], tmp_path / "t.jsonl")  # replaces
    assert len(load_jsonl_file(Trace, tmp_path / "t.jsonl")) == 1


def test_bad_files_name_the_file_line_and_field(tmp_path):
    path = tmp_path / "s.jsonl"
    good = Solution.model_validate(python_solution("a", "def run(x, y):\n    return x\n"))
    save_jsonl_file([good], path)
    path.write_text(path.read_text() + '{"name": "b"}\n')
    with pytest.raises(TraceSetError, match=rf"{path}:2: field 'definition': required field is missing"):
        load_jsonl_file(Solution, path)
    with pytest.raises(FileNotFoundError):
        load_json_file(Solution, tmp_path / "missing.json")
