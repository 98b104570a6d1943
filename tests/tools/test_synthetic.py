"""Synthetic workloads and blobs: valid for every definition of the public dataset, and for the dataset's own
workloads whose blobs it does not ship."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from helpers import REPO

from flashinfer_bench.data import Definition, TraceSet, Workload
from flashinfer_bench.data.workload_check import check_workload
from flashinfer_bench.tools.memory import estimated_peak_bytes, input_bytes
from flashinfer_bench.tools.synthetic import UnsatisfiableWorkload, build_inputs, small_axes, synthesize
from flashinfer_bench.tools.workload_files import write_missing_blobs, write_synthetic_workload

CORPUS = REPO.parent / "shared" / "corpus" / "flashinfer-trace"
needs_corpus = pytest.mark.skipif(not (CORPUS / "definitions").is_dir(), reason=f"no dataset at {CORPUS}")

PAGED = Definition.model_validate({
    "name": "paged_decode_ps4",
    "op_type": "gqa_paged",
    "axes": {"batch_size": {"type": "var"}, "len_indptr": {"type": "var"}, "num_kv_indices": {"type": "var"},
             "num_pages": {"type": "var"}, "page_size": {"type": "const", "value": 4},
             "head_dim": {"type": "const", "value": 8}},
    "inputs": {"q": {"shape": ["batch_size", "head_dim"], "dtype": "bfloat16"},
               "k_cache": {"shape": ["num_pages", "page_size", "head_dim"], "dtype": "bfloat16"},
               "kv_indptr": {"shape": ["len_indptr"], "dtype": "int32"},
               "kv_indices": {"shape": ["num_kv_indices"], "dtype": "int32"},
               "kv_last_page_len": {"shape": ["batch_size"], "dtype": "int32"},
               "sm_scale": {"shape": None, "dtype": "float32"}},
    "outputs": {"out": {"shape": ["batch_size", "head_dim"], "dtype": "bfloat16"}},
    "reference": "def run(q, k_cache, kv_indptr, kv_indices, kv_last_page_len, sm_scale):\n    return q\n",
    "constraints": ["len_indptr == batch_size + 1", "num_kv_indices == kv_indptr[-1].item()"],
})


def dataset_definitions() -> list[Definition]:
    if not CORPUS.is_dir():
        return []
    return [Definition.model_validate_json(p.read_text()) for p in sorted((CORPUS / "definitions").rglob("*.json"))]


def test_page_table_from_axes():
    built = build_inputs(PAGED, {"batch_size": 3, "len_indptr": 4, "num_kv_indices": 7, "num_pages": 9})
    indptr, indices = built.tensors["kv_indptr"], built.tensors["kv_indices"]
    assert indptr.dtype == torch.int32 and indptr[0] == 0 and indptr[-1] == 7 and bool((indptr.diff() >= 1).all())
    assert len(set(indices.tolist())) == 7 and int(indices.max()) < 9
    assert bool(((built.tensors["kv_last_page_len"] >= 1) & (built.tensors["kv_last_page_len"] <= 4)).all())
    assert built.scalars["sm_scale"] == pytest.approx(8 ** -0.5)


def test_pages_into_an_empty_cache_are_unsatisfiable():
    with pytest.raises(UnsatisfiableWorkload, match="empty"):
        build_inputs(PAGED, {"batch_size": 1, "len_indptr": 2, "num_kv_indices": 2, "num_pages": 0})


def test_missing_blob_written_for_an_existing_workload(tmp_path):
    blob = {"type": "safetensors", "path": "./blob/w.safetensors"}
    workload = Workload.model_validate({
        "axes": {"batch_size": 2, "len_indptr": 3, "num_kv_indices": 5, "num_pages": 6},
        "inputs": {"kv_indptr": {**blob, "tensor_key": "kv_indptr"}, "kv_indices": {**blob, "tensor_key": "kv_indices"},
                   "sm_scale": {"type": "scalar", "value": 0.5}},
        "uuid": "w1",
    })
    assert write_missing_blobs(tmp_path, PAGED, workload) == [tmp_path / "./blob/w.safetensors"]
    assert check_workload(PAGED, workload, tmp_path) == []
    assert write_missing_blobs(tmp_path, PAGED, workload) == []  # present now: nothing to write


@pytest.mark.parametrize("path", ["../outside.safetensors", "blob/../../outside.safetensors", "/tmp/abs.safetensors"])
def test_a_blob_path_outside_the_trace_set_is_refused_and_nothing_is_written(tmp_path, path):
    root = tmp_path / "set"
    root.mkdir()
    blob = {"type": "safetensors", "path": path.replace("/tmp", str(tmp_path))}
    workload = Workload.model_validate({
        "axes": {"batch_size": 2, "len_indptr": 3, "num_kv_indices": 5, "num_pages": 6},
        "inputs": {"kv_indptr": {**blob, "tensor_key": "kv_indptr"}, "kv_indices": {**blob, "tensor_key": "kv_indices"},
                   "sm_scale": {"type": "scalar", "value": 0.5}},
        "uuid": "w1",
    })
    with pytest.raises(ValueError, match="must be relative to the trace set and stay inside it"):
        write_missing_blobs(root, PAGED, workload)
    assert [p for p in tmp_path.rglob("*") if p != root] == []


def test_synthetic_workload_is_public_jsonl(tmp_path):
    trace = write_synthetic_workload(tmp_path, PAGED, synthesize(PAGED))
    assert list(trace["workload"]) == ["axes", "inputs", "uuid"]
    workload = Workload.model_validate(trace["workload"])
    assert check_workload(PAGED, workload, tmp_path) == []
    assert workload.inputs["sm_scale"].type == "scalar"


@needs_corpus
@pytest.mark.parametrize("definition", dataset_definitions(), ids=lambda d: d.name)
def test_every_dataset_definition_gets_a_valid_small_workload(definition):
    synthetic = synthesize(definition)  # raises if a constraint is broken
    axes = definition.bind_axes(synthetic.axes)
    assert set(synthetic.axes) == set(definition.var_axes)
    assert all(v <= 4096 for k, v in synthetic.axes.items() if k not in ("num_pages", "max_num_pages"))
    tensors = synthetic.tensors
    for name, tensor in tensors.items():
        spec = definition.inputs[name]
        assert tuple(tensor.shape) == definition.shape_of(spec, axes), name
    if "kv_indices" in tensors:
        cache = next(n for n in definition.inputs if n.endswith("_cache"))
        assert int(tensors["kv_indices"].max()) < definition.shape_of(definition.inputs[cache], axes)[0]
    if "sparse_indices" in tensors:
        valid = tensors["sparse_indices"][tensors["sparse_indices"] >= 0]
        assert int(valid.max()) < axes["num_pages"] * axes["page_size"] and int(tensors["sparse_indices"].min()) >= -1
    if "block_table" in tensors:
        assert int(tensors["block_table"].max()) < axes["num_pages"]
        assert int(tensors["seq_lens"].max()) <= axes["max_num_pages"] * axes["page_size"]
    for slots, pool in (("initial_state_indices", "pool_size"), ("state_batch_indices", "state_cache_size")):
        if slots in tensors:
            assert 0 <= int(tensors[slots].min()) and int(tensors[slots].max()) < axes[pool]
    if "positions" in tensors:
        assert int(tensors["positions"].max()) < axes["max_seq_len"]
    if "topk_ids" in tensors:
        assert int((tensors["topk_ids"] >> 16).max()) < axes["num_experts"]
    if definition.op_type == "sampling":
        assert torch.allclose(tensors["probs"].sum(-1), torch.ones(axes["batch_size"]))
        assert "top_k" not in tensors or int(tensors["top_k"].min()) >= 1
        assert "top_p" not in tensors or 0 < float(tensors["top_p"].max()) <= 1
    assert input_bytes(definition, synthetic.axes) <= estimated_peak_bytes(definition, synthetic.axes)


@needs_corpus
def test_blobs_for_the_datasets_own_workloads(tmp_path):
    """The dataset names 307 blobs it does not ship; all but two can be written (those two put page indices
    into a cache of zero pages), and then every workload passes the per-workload checks."""
    root = tmp_path / "ds"
    shutil.copytree(CORPUS / "definitions", root / "definitions")
    shutil.copytree(CORPUS / "workloads", root / "workloads")
    trace_set = TraceSet.from_path(root)
    written, unsatisfiable, problems = 0, [], []
    for name, traces in trace_set.workloads.items():
        definition = trace_set.definitions[name]
        for trace in traces:
            try:
                written += len(write_missing_blobs(root, definition, trace.workload))
            except UnsatisfiableWorkload:
                unsatisfiable.append(trace.workload.uuid)
                continue
            problems += [(name, str(p)) for p in check_workload(definition, trace.workload, root)]
    assert problems == []
    assert written + len(unsatisfiable) == sum(
        1 for path in (CORPUS / "workloads").rglob("*.jsonl") for line in path.read_text().splitlines()
        if '"safetensors"' in line
    )
    assert sorted(unsatisfiable) == ["02188515-7e6a-4e7d-a484-7d6719d09d28", "f9d25d06-2ca0-4e17-b329-e377b42b370c"]


def test_small_axes_derive_structure():
    axes = small_axes(PAGED)
    assert axes["len_indptr"] == axes["batch_size"] + 1 and axes["num_pages"] > axes["num_kv_indices"]
    assert json.loads(json.dumps(axes)) == axes


def test_write_synthetic_blob_round_trips(tmp_path: Path):
    synthetic = synthesize(PAGED)
    trace = write_synthetic_workload(tmp_path, PAGED, synthetic, name="w")
    from safetensors.torch import load_file

    stored = load_file(str(tmp_path / trace["workload"]["inputs"]["kv_indptr"]["path"]))
    assert torch.equal(stored["kv_indptr"], synthetic.tensors["kv_indptr"])
