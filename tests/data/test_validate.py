import subprocess
import sys

import pytest
import torch
from helpers import SCALE_ADD, child_env, workload_line, write_trace_set
from safetensors.torch import save_file
from test_upstream_format import DATASET, needs_corpus

from flashinfer_bench.data import TraceSet
from flashinfer_bench.data.validate import render_text, validate_trace_set
from flashinfer_bench.data.workload_check import check_workload

PAGED = dict(
    SCALE_ADD, name="paged", op_type="gqa_paged",
    axes={"batch_size": {"type": "var"}, "len_indptr": {"type": "var"}, "num_kv_indices": {"type": "var"}},
    inputs={"kv_indptr": {"shape": ["len_indptr"], "dtype": "int32"},
            "kv_indices": {"shape": ["num_kv_indices"], "dtype": "int32"}},
    outputs={"out": {"shape": ["batch_size"], "dtype": "float32"}},
    constraints=["len_indptr == batch_size + 1", "num_kv_indices == kv_indptr[-1].item()"],
    reference="import torch\ndef run(kv_indptr, kv_indices):\n    return kv_indptr[1:].float()\n",
)
BLOB = "blob/workloads/gqa_paged/paged/w.safetensors"
AXES = {"batch_size": 2, "len_indptr": 3, "num_kv_indices": 5}
INPUTS = {name: {"type": "safetensors", "path": BLOB, "tensor_key": name} for name in ("kv_indptr", "kv_indices")}


def _paged_set(tmp_path, tensors):
    root = write_trace_set(tmp_path, [PAGED], [], {"paged": [workload_line("paged", "w", AXES, INPUTS)]})
    if tensors is not None:
        (root / BLOB).parent.mkdir(parents=True)
        save_file(tensors, str(root / BLOB))
    return root


GOOD = {"kv_indptr": torch.tensor([0, 2, 5], dtype=torch.int32), "kv_indices": torch.arange(5, dtype=torch.int32)}


@pytest.mark.parametrize(
    ("tensors", "message"),
    [
        (GOOD, None),
        (None, "does not exist"),
        ({**GOOD, "kv_indptr": torch.tensor([0, 2, 4], dtype=torch.int32)},
         "constraint 'num_kv_indices == kv_indptr[-1].item()' is false (num_kv_indices = 5, kv_indptr[-1].item() = 4)"),
        ({**GOOD, "kv_indptr": torch.tensor([0, 2, 5], dtype=torch.int64)}, "is I64, the definition says int32 (I32)"),
        ({**GOOD, "kv_indptr": torch.tensor([0, 5], dtype=torch.int32)}, "has shape [2], the workload's axes give [3]"),
        ({"kv_indices": GOOD["kv_indices"], "indptr": GOOD["kv_indptr"]}, "has no tensor 'kv_indptr'"),
        ("garbage", "is not a readable safetensors file"),
    ],
)
def test_each_malformed_blob_gets_its_own_clear_error(tmp_path, tensors, message):
    root = _paged_set(tmp_path, None if tensors == "garbage" else tensors)
    if tensors == "garbage":
        (root / BLOB).parent.mkdir(parents=True)
        (root / BLOB).write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00not json")
    trace_set = TraceSet.from_path(root)
    problems = [str(p) for p in check_workload(trace_set.definitions["paged"], trace_set.workloads["paged"][0].workload, root)]
    if message is None:
        assert problems == []
    else:
        assert problems and all(message in p for p in problems), problems


def test_validate_reports_each_problem_and_exits_1(tmp_path):
    root = _paged_set(tmp_path, {**GOOD, "kv_indptr": torch.tensor([0, 2, 4], dtype=torch.int32)})
    broken = root / "definitions" / "gqa_paged" / "broken.json"
    broken.write_text("{}")
    cli = [sys.executable, "-m", "flashinfer_bench.cli.main", "validate", "--dataset", str(root)]
    done = subprocess.run(cli, capture_output=True, text=True, timeout=120, env=child_env())
    assert done.returncode == 1, done.stderr
    assert "w: constraints: constraint 'num_kv_indices == kv_indptr[-1].item()' is false" in done.stdout
    assert "--- broken [ERROR] ---" in done.stdout and "required field is missing" in done.stdout
    only_layout = subprocess.run([*cli, "--checks", "layout"], capture_output=True, text=True, timeout=120, env=child_env())
    assert only_layout.returncode == 0 and "constraint" not in only_layout.stdout
    unknown = subprocess.run([*cli, "--checks", "layout,nope"], capture_output=True, text=True, timeout=120, env=child_env())
    assert unknown.returncode == 2 and "unknown checks ['nope']" in unknown.stderr


def test_layout_mismatches_are_errors_and_other_places_warnings(tmp_path):
    root = _paged_set(tmp_path, GOOD)
    moved = root / "definitions" / "elsewhere" / "paged.json"
    moved.parent.mkdir()
    (root / "definitions" / "gqa_paged" / "paged.json").rename(moved)
    (root / "workloads" / "gqa_paged" / "paged.jsonl").rename(root / "workloads" / "paged.jsonl")
    report = validate_trace_set(root)
    messages = [f"{f.level}: {f.message}" for f in report.findings["paged"]]
    assert any(m.startswith("error:") and "path says op_type 'elsewhere'" in m for m in messages), messages
    assert any(m.startswith("warning:") and "workloads/<op_type>/<definition>.jsonl" in m for m in messages), messages


@needs_corpus
def test_validate_on_the_dataset_names_the_307_absent_blobs_and_nothing_else():
    report = validate_trace_set(DATASET)
    findings = [f for fs in report.findings.values() for f in fs]
    assert len(findings) == 307 and report.warnings == 0
    assert all(f.check == "workload" and "blob file" in f.message and "does not exist" in f.message for f in findings)
    assert "156 definitions: 147 ok, 0 warning, 9 error" in render_text(report)


def test_an_output_of_a_type_chosen_at_run_time_cannot_be_judged():
    from flashinfer_bench.data import Definition, Workload
    from flashinfer_bench.data.workload_check import check_workload

    definition = Definition.model_validate({
        "name": "pick", "op_type": "gather", "axes": {"n": {"type": "var"}},
        "inputs": {"x": {"shape": ["n"], "dtype": "float32"}},
        "outputs": {"out": {"shape": ["n"], "dtype": "unknown"}},
        "reference": "def run(x):\n    return x\n", "tags": ["fi_api:flashinfer.pick"]})
    problems = check_workload(definition, Workload(uuid="w", axes={"n": 4}, inputs={}), None)
    assert [p.field for p in problems] == ["definition.outputs.out.dtype"]
    assert "cannot be judged" in problems[0].message
