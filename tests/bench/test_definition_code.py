"""A definition's ``init`` as the input generator and its reference called by name, on FlashInfer's own dumps
(../shared/corpus/flashinfer-dumps): the definitions whose references run on a CPU pass their own reference from
``init``-made inputs; the others say why they cannot."""

import pytest
import torch
from helpers import REPO, SCALE_ADD

from flashinfer_bench.bench.definition_code import (
    DefinitionCodeError,
    call_reference,
    reference_problem,
    required_init_axes,
    run_init,
    workload_from_init,
)
from flashinfer_bench.bench.evaluators.definition_check import run_check
from flashinfer_bench.bench.inputs import InputPlan, generate_inputs
from flashinfer_bench.compile.errors import BuildError
from flashinfer_bench.data import Definition, TraceSet, Workload

DUMPS = REPO.parent / "shared" / "corpus" / "flashinfer-dumps"
needs_dumps = pytest.mark.skipif(not DUMPS.is_dir(), reason=f"the FlashInfer dumps are not at {DUMPS}")

#: Dumps whose init and reference both run on a CPU (the others need FlashInfer or CUDA, or are listed below).
CPU_RUNNABLE = [
    "chain_speculative_sampling_v32000", "concat_mla_k_h128_nope128_rope64_d192", "fmha_v2_prefill_sm120_h4_d128",
    "gdn_fused_decode_h5120_v48_d128", "gelu_and_mul_h16384",
    "gelu_tanh_and_mul_h16384", "gemm_bf16_N256_K7168", "gemma_rmsnorm_h4608", "layernorm_h768",
    "layernorm_quant_h768", "merge_state_in_place_h32_d128", "merge_states_h32_d128",
    "min_p_sampling_v32000", "mla_paged_decode_h16_ckv512_kpe64_ps1", "mla_paged_decode_h16_ckv512_kpe64_ps64",
    "msa_proxy_score_h4_kv1_d128", "msa_sparse_attention_h64_kv4_d128_topk16",
    "msa_sparse_decode_attention_h64_kv4_d128_topk16", "rmsnorm_h4096", "rmsnorm_h7168",
    "sampling_from_probs_v32000", "silu_and_mul_h16384",
    "single_decode_h32_kv8_d128", "single_prefill_h32_kv8_d128", "softmax_v32000", "top_k_mask_logits_v32000",
    "top_k_renorm_probs_v32000", "top_k_sampling_v128256", "top_k_top_p_sampling_v128256",
    "top_p_renorm_probs_v32000", "top_p_sampling_v32000", "trtllm_batch_decode_block_sparse_h16_kv2_d128_ps16",
]
#: Dumps that cannot be judged, and the reason each gives (found by reading it, or when its code runs).
CANNOT = {
    "rope_h32_kv8_d128": "uses ['_apply_rope_core', '_positions_from_indptr', '_rope_freqs']",
    "sampling_from_logits_v32000": "uses ['_sampling_from_probs_reference']",
    "mxfp8_grouped_quantize_k4096": "has no reference",
    "gqa_paged_decode_h32_kv8_d128_ps64": "needs ['sm_scale'], which no input gives (init does not make them)",
    "fused_add_rmsnorm_h5120": "returned 1 outputs, the definition declares 2 (output, residual)",
    "bmm_mxfp8_N128_K128": "No module named 'flashinfer'",
    "rmsnorm_quant_h7168": "returned 'out' as float8_e4m3fn, the definition says bfloat16",
    "merge_state_h32_d128": "returned 'v_merged' as float32, the definition says bfloat16",
    "silu_and_mul_nvfp4_quantize_k16384": "returns 'sf' with 2 dimensions [4, 512], its shape ['num_scale_elems']",
    # one query head over 16 KV heads: the reference's heads-per-group is 1 // 16
    "xqa_h1_kv16_d8_ps2": "the reference of xqa_h1_kv16_d8_ps2 failed: ZeroDivisionError",
}


@pytest.fixture(scope="module")
def dumps() -> TraceSet:
    return TraceSet.from_path(DUMPS)


def _small_workload(definition: Definition) -> Workload:
    return workload_from_init(definition, {axis: 4 for axis in required_init_axes(definition)}, seed=0)


def _reference_outputs(definition: Definition, inputs: list) -> tuple:
    with torch.random.fork_rng():  # sampling references draw from torch's global generator
        torch.manual_seed(1)
        return call_reference(definition, dict(zip(definition.inputs, inputs, strict=True)))


def _same(a, b) -> bool:
    """Equal values (NaN equal to NaN: init poisons the buffers it leaves unwritten with NaN)."""
    if isinstance(a, torch.Tensor):
        if not isinstance(b, torch.Tensor) or a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.is_floating_point() and a.element_size() > 1:
            return bool(torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(0.0), b.nan_to_num(0.0)))
        as_bytes = (lambda t: t.view(torch.uint8)) if a.element_size() == 1 else (lambda t: t)
        return torch.equal(as_bytes(a), as_bytes(b))
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@needs_dumps
@pytest.mark.parametrize("name", CPU_RUNNABLE)
def test_the_reference_passes_against_itself_from_init_made_inputs(dumps, name):
    definition = dumps.definitions[name]
    workload = _small_workload(definition)
    first = InputPlan(definition, workload, "cpu", None).draw(11)
    again = InputPlan(definition, workload, "cpu", None).draw(11)  # the worker's plan, from the same seed
    assert _same(first, again)
    assert not _same(first, InputPlan(definition, workload, "cpu", None).draw(12)) or all(
        not isinstance(value, torch.Tensor) or not value.is_floating_point() for value in first)
    expected, actual = _reference_outputs(definition, first), _reference_outputs(definition, again)
    assert len(expected) == len(definition.outputs)
    assert _same(expected, actual)
    if definition.check is not None:
        verdict = run_check(definition, {}, actual, expected)
        assert verdict.passed, verdict.message


@needs_dumps
@pytest.mark.parametrize("name", sorted(CANNOT))
def test_a_dump_that_cannot_be_judged_says_why(dumps, name):
    definition = dumps.definitions[name]
    said = reference_problem(definition)
    if said is None:
        with pytest.raises((DefinitionCodeError, BuildError)) as raised:
            _reference_outputs(definition, InputPlan(definition, _small_workload(definition), "cpu", None).draw(0))
        said = str(raised.value)
    assert CANNOT[name] in said


@needs_dumps
def test_init_plan_arguments_are_layout_inputs_and_tuple_elements_find_their_inputs(dumps):
    definition = dumps.definitions["mla_paged_decode_h16_ckv512_kpe64_ps64"]
    made = run_init(definition, {"batch_size": 2}, seed=3, device="cpu")
    assert {"kv_indptr", "kv_indices"} <= made.layout and "q_nope" not in made.layout
    assert made.axes["batch_size"] == 2 and made.axes["page_size"] == 64
    decode = dumps.definitions["gqa_paged_decode_h32_kv8_d128_ps16"]
    made = run_init(decode, {"batch_size": 3}, seed=3, device="cpu")
    assert made.values["k_cache"].shape == made.values["v_cache"].shape == (made.axes["num_pages"], 16, 8, 128)
    assert made.values["kv_indptr"].shape == (4,) and "sm_scale" not in made.values
    assert not torch.equal(made.values["k_cache"], made.values["v_cache"])


@needs_dumps
def test_init_leaves_torchs_global_generator_as_it_found_it(dumps):
    definition = dumps.definitions["rmsnorm_h4096"]
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    run_init(definition, {"batch_size": 2}, seed=99, device="cpu")
    assert torch.equal(torch.rand(3), expected)


@needs_dumps
def test_a_workload_whose_axes_disagree_with_what_init_makes_is_refused(dumps):
    definition = dumps.definitions["gqa_paged_decode_h32_kv8_d128_ps16"]
    workload = _small_workload(definition)
    wrong = Workload(axes={**workload.axes, "num_pages": workload.axes["num_pages"] + 1}, inputs={}, uuid="w")
    with pytest.raises(ValueError, match="num_pages is"):
        generate_inputs(definition, wrong, 0, "cpu", None)


def test_an_input_whose_dtype_is_open_needs_init_or_the_workload():
    definition = Definition.model_validate(dict(SCALE_ADD, inputs={
        "x": {"shape": ["n"], "dtype": "float32"}, "y": {"shape": ["n"], "dtype": "unknown"}}))
    with pytest.raises(ValueError, match=r"inputs 'y' \(unknown\) name no element type"):
        generate_inputs(definition, Workload(axes={"n": 4}, inputs={}, uuid="u"), 0, "cpu", None)
    given = Workload.model_validate({"axes": {"n": 4}, "inputs": {"y": {"type": "scalar", "value": 2}}, "uuid": "u"})
    assert generate_inputs(definition, given, 0, "cpu", None)[1] == 2
