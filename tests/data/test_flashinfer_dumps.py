"""Definitions as FlashInfer writes them (../shared/corpus/flashinfer-dumps): every file loads and comes back
byte for byte, or its problem names a real defect of the file; upstream's files load and write as before."""

import json

import pytest
from helpers import REPO, SCALE_ADD, write_trace_set

from flashinfer_bench.compile import build_reference
from flashinfer_bench.compile.errors import BuildError
from flashinfer_bench.data import Definition, TraceSet
from flashinfer_bench.data.definition_file import definition_document, definition_text
from flashinfer_bench.data.dtypes import DType, OpenDType

CORPUS = REPO.parent / "shared" / "corpus"
DUMPS = CORPUS / "flashinfer-dumps"
DATASET = CORPUS / "flashinfer-trace"
needs_dumps = pytest.mark.skipif(not DUMPS.is_dir(), reason=f"the FlashInfer dumps are not at {DUMPS}")
#: The four files whose tensor shapes name an axis the file never declares (FlashInfer's template bug).
UNDECLARED_AXIS = {"gemm_fp4_N2048_K7168_block_size16": "K_div_block_size", "gemm_fp8_N1536_K7168": "K_div_block_size",
                   "mm_bf16_fp4_cudnn_N2048_K7168_block_size16": "K_div_2",
                   "mm_bf16_fp4_cute_dsl_N2048_K7168_block_size16": "K_div_16"}


def _dump(name: str) -> dict:
    return json.loads((DUMPS / "definitions" / f"{name}.json").read_text())


@needs_dumps
def test_every_dump_loads_or_names_the_axis_its_shape_uses_without_declaring():
    files = sorted((DUMPS / "definitions").glob("*.json"))
    trace_set = TraceSet.from_path(DUMPS)
    assert len(files) == 121
    assert len(trace_set.definitions) == 121 - len(UNDECLARED_AXIS)
    problems = {problem.path.rsplit("/", 1)[1][:-5]: str(problem) for problem in trace_set.problems}
    assert set(problems) == set(UNDECLARED_AXIS)
    for name, axis in UNDECLARED_AXIS.items():
        assert f"names axis '{axis}', which is not declared in axes" in problems[name]


@needs_dumps
def test_each_dump_is_written_back_byte_for_byte():
    written = 0
    for file in sorted((DUMPS / "definitions").glob("*.json")):
        if file.stem in UNDECLARED_AXIS:
            continue
        original = file.read_bytes()
        assert definition_text(Definition.model_validate_json(original)).encode() == original, file.name
        written += 1
    assert written == 117


@pytest.mark.skipif(not DATASET.is_dir(), reason=f"the public dataset is not at {DATASET}")
def test_upstreams_definitions_lose_no_key_either():
    for file in sorted((DATASET / "definitions").rglob("*.json")):
        original = json.loads(file.read_text())
        document = definition_document(Definition.model_validate_json(file.read_bytes()))
        assert document == original and list(document) == list(original), file.name


@needs_dumps
def test_flashinfers_fields_are_read():
    decode = Definition.model_validate(_dump("gqa_paged_decode_h32_kv8_d128_ps64"))
    assert decode.fi_api == "flashinfer.decode.BatchDecodeWithPagedKVCacheWrapper.run"
    assert decode.reference_entry == "_gqa_paged_decode_reference"
    assert decode.inputs["kv_indptr"].dtype is OpenDType.UNKNOWN and decode.inputs["kv_indptr"].optional
    assert decode.inputs["sm_scale"].shape is None and decode.inputs["q"].dtype is DType.BFLOAT16
    assert decode.init is not None and decode.check is None and decode.status == "verified"
    rmsnorm = Definition.model_validate(_dump("fused_add_rmsnorm_h5120"))
    assert rmsnorm.in_place_outputs == ["residual"] and rmsnorm.outputs["output"].param == "input"
    append = Definition.model_validate(_dump("append_paged_kv_cache_kv8_d128"))
    assert "page_size" not in append.const_axes and "page_size" in append.workload_axes
    with pytest.raises(ValueError, match=r"does not bind var axes \[.*'page_size'"):
        append.bind_axes({axis: 4 for axis in append.var_axes})


@needs_dumps
def test_what_upstream_writes_is_unchanged_and_carries_init_and_check_but_not_tensor_additions():
    definition = Definition.model_validate(_dump("mla_paged_decode_h16_ckv512_kpe64_ps64"))
    written = json.loads(definition.model_dump_json())
    assert list(written)[:6] == ["name", "op_type", "axes", "inputs", "outputs", "reference"]
    assert written["init"] == definition.init and written["check"] == definition.check
    assert all("optional" not in spec and "param" not in spec for spec in written["inputs"].values())
    assert Definition.model_validate_json(definition.model_dump_json()).init == definition.init


@needs_dumps
def test_a_definition_flashinfer_wrote_without_a_reference_loads_and_says_it_cannot_be_called():
    definition = Definition.model_validate(_dump("trtllm_gen_routing_e256_k8_t8"))
    assert definition.reference is None and definition.reference_entry is None
    assert "reference" not in json.loads(definition.model_dump_json())
    with pytest.raises(BuildError, match="has no reference"):
        build_reference(definition)


def test_without_flashinfers_tag_a_reference_is_still_required(tmp_path):
    no_reference = {key: value for key, value in SCALE_ADD.items() if key != "reference"}
    trace_set = TraceSet.from_path(write_trace_set(tmp_path / "a", [dict(no_reference, name="a"),
                                                                    dict(SCALE_ADD, name="b", reference=None)], [], {}))
    assert list(trace_set.definitions) == [] and len(trace_set.problems) == 2
    assert {problem.field for problem in trace_set.problems} == {"reference", None}
    assert any("only a definition FlashInfer wrote" in str(problem) for problem in trace_set.problems)


def test_reference_entry_is_run_or_the_last_function_named_like_a_reference():
    helpers = "def _helper(x):\n    return x\n\n"
    assert Definition.model_validate(dict(SCALE_ADD, reference=helpers + "def _op_reference(x, y):\n    return x\n"
                                          )).reference_entry == "_op_reference"
    assert Definition.model_validate(dict(SCALE_ADD, reference="def run(x, y):\n    return x\n\n"
                                          "def _op_reference(x, y):\n    return y\n")).reference_entry == "run"
    with pytest.raises(ValueError, match="its last is '_helper'"):
        Definition.model_validate(dict(SCALE_ADD, reference="def _op_reference(x):\n    return x\n\n" + helpers))
    with pytest.raises(ValueError, match="init must end with a top-level function named '<name>_init'"):
        Definition.model_validate(dict(SCALE_ADD, init="def make():\n    return {}\n"))


def test_keys_no_field_declares_are_written_back_by_the_file_writer_only(tmp_path):
    document = dict(SCALE_ADD, tags=["fi_api:flashinfer.toy"], future={"kept": [1, 2]})
    document["inputs"] = {"x": {"dtype": "float32", "shape": ["n"], "layout": "NHD"},
                          "y": {"shape": ["n"], "dtype": "string", "optional": True}}
    definition = Definition.model_validate(document)
    assert definition_document(definition) == document
    assert list(definition_document(definition)["inputs"]["x"]) == ["dtype", "shape", "layout"]
    assert "future" not in json.loads(definition.model_dump_json())
    assert definition.undeclared_values == {"future": {"kept": [1, 2]}}


@needs_dumps
def test_merging_writes_flashinfers_definitions_back_as_they_were(tmp_path):
    from flashinfer_bench.data.merge import merge_trace_sets

    report = merge_trace_sets([DUMPS], tmp_path / "merged")
    assert report.definitions == 117 and len(report.problems) == len(UNDECLARED_AXIS)
    for file in sorted((tmp_path / "merged" / "definitions").rglob("*.json")):
        assert file.read_bytes() == (DUMPS / "definitions" / file.name).read_bytes(), file.name
