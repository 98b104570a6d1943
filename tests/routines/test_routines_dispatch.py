"""FlashInfer dispatch against a fake ``flashinfer`` module (no GPU, no FlashInfer needed)."""

import sys
import types

import pytest
import torch

from flashinfer_bench.routines import attention, runner
from flashinfer_bench.routines.args import parse_case
from flashinfer_bench.routines.backends import select_backends
from flashinfer_bench.routines.cli import main

DECODE = ("--routine BatchDecodeWithPagedKVCacheWrapper --page_size 4 --batch_size 2 --s_kv 9 --num_qo_heads 4 "
          "--num_kv_heads 2 --head_dim_qk 16 --head_dim_vo 16")


def test_support_matrix_and_compute_capability_filter():
    args = parse_case(f"{DECODE.replace('Decode', 'Prefill')} --s_qo 1".split())
    routine = "BatchPrefillWithPagedKVCacheWrapper"
    # FlashInfer's benchmark's table for paged prefill: fa3 on 9.0 only, trtllm-gen on 10.x only, cudnn from 8.0
    kept, warnings = select_backends(routine, ["fa2", "fa3", "cudnn", "trtllm-gen", "torch"], (9, 0), None, args)
    assert kept == ["fa2", "fa3", "cudnn", "torch"]
    assert warnings == [f"trtllm-gen for routine {routine} is not supported on compute capability 9.0. Skipping."]
    kept, warnings = select_backends(routine, ["fa3", "cudnn"], (10, 0), None, args)
    assert kept == ["cudnn"] and "fa3" in warnings[0] and "10.0" in warnings[0]
    kept, warnings = select_backends(routine, ["fa2", "torch"], (9, 0), "ModuleNotFoundError: x", args)
    assert kept == ["torch"] and "needs the flashinfer package" in warnings[0]
    gqa5 = parse_case(DECODE.replace("--num_qo_heads 4", "--num_qo_heads 10").split())
    kept, warnings = select_backends("BatchDecodeWithPagedKVCacheWrapper", ["fa2", "fa2_tc"], (9, 0), None, gqa5)
    assert kept == ["fa2_tc"] and "GQA ratio of 5" in warnings[0]


def test_lines_of_flashinfers_sample_test_list_run_what_they_can_on_compute_capability_9(capsys, fake_timer,
                                                                                      monkeypatch):
    """The three test lines of FlashInfer's own sample list that behaved differently here (an H100, CC 9.0)."""
    bare = types.ModuleType("flashinfer")  # importable, but with none of the kernels
    bare.__version__ = "0.7.2-bare"
    monkeypatch.setitem(sys.modules, "flashinfer", bare)
    monkeypatch.setattr(runner, "compute_capability", lambda device: (9, 0))
    mla = ("--routine BatchMLAPagedAttentionWrapper --backends fa2 fa3 torch --page_size 4 --batch_size 2 --s_qo 1 "
           "--s_kv 9 --num_qo_heads 4 --head_dim_ckv 16 --head_dim_kpe 8")
    assert main(mla.split(), timer=fake_timer) == 1  # fa2 fails on the fake flashinfer; fa3 is skipped, torch runs
    out = capsys.readouterr().out
    assert ("[WARNING] fa3 for routine BatchMLAPagedAttentionWrapper is not implemented by this benchmark. "
            "Skipping.") in out and "[PERF] torch" in out
    group_gemm = "--routine group_gemm_fp8_nt_groupwise --m 4 --n 128 --k 128 --group_size 2"
    assert main(group_gemm.split(), timer=fake_timer) == 2  # FlashInfer's default GEMM backend, cudnn: not here
    out = capsys.readouterr().out
    assert "cudnn for routine group_gemm_fp8_nt_groupwise is not implemented by this benchmark" in out
    assert "[ERROR] none of the backends asked for (cudnn) can run here" in out and "[PERF]" not in out
    moe = ("--routine cutlass_fused_moe --num_tokens 4 --hidden_size 64 --intermediate_size 32 --num_experts 4 "
           "--top_k 2")
    assert main(moe.split(), timer=fake_timer) == 2  # its one backend, not built for CC 9.0
    out = capsys.readouterr().out
    assert "cutlass for routine cutlass_fused_moe is not supported on compute capability 9.0. Skipping." in out
    assert "[ERROR] none of the backends asked for (cutlass) can run here" in out and "[PERF]" not in out


class FakeDecodeWrapper:
    """Records construction and plan; run() answers with the torch reference so refcheck can pass."""

    instances: list = []

    def __init__(self, workspace, layout, **kwargs):
        self.layout, self.kwargs, self.planned = layout, kwargs, None
        self.runs: list[dict] = []
        FakeDecodeWrapper.instances.append(self)

    def plan(self, *args, **kwargs):
        self.planned = (args, kwargs)

    def run(self, q, kv, *, out=None, enable_pdl=None):
        self.runs.append({"out": out, "enable_pdl": enable_pdl})
        answer = FakeDecodeWrapper.answer(q, kv)
        if out is not None:
            answer = out.copy_(answer)
        return answer, torch.zeros(1)  # (out, lse) like return_lse=True


@pytest.fixture
def fake_flashinfer(monkeypatch):
    fake = types.ModuleType("flashinfer")
    fake.__version__ = "0.7.2-fake"
    fake.BatchDecodeWithPagedKVCacheWrapper = FakeDecodeWrapper
    FakeDecodeWrapper.instances = []
    monkeypatch.setitem(sys.modules, "flashinfer", fake)
    monkeypatch.setattr(runner, "compute_capability", lambda device: (9, 0))
    return fake


def test_decode_wrappers_are_planned_as_flashinfer_expects(fake_flashinfer, capsys, fake_timer):
    args = parse_case(DECODE.split())
    inp = attention.make_inputs(args, torch.device("cpu"))
    FakeDecodeWrapper.answer = staticmethod(lambda q, kv: attention.torch_attention(inp, args, torch.bfloat16))
    status = main(f"{DECODE} --backends fa2 fa2_tc trtllm-gen torch --refcheck".split(), timer=fake_timer)
    out = capsys.readouterr().out
    assert status == 0, out
    assert "[INFO] FlashInfer version: 0.7.2-fake" in out
    assert "[WARNING] trtllm-gen for routine BatchDecodeWithPagedKVCacheWrapper is not supported on compute " \
           "capability 9.0. Skipping." in out
    assert [line.split("::")[0] for line in out.splitlines() if line.startswith("[PERF]")] == [
        "[PERF] fa2       ", "[PERF] fa2_tc    ", "[PERF] torch     "]
    fa2, fa2_tc = FakeDecodeWrapper.instances
    assert (fa2.kwargs["use_tensor_cores"], fa2_tc.kwargs["use_tensor_cores"]) == (False, True)
    assert fa2.kwargs["backend"] == fa2_tc.kwargs["backend"] == "fa2" and fa2.layout == "NHD"
    plan_args, plan_kwargs = fa2.planned
    assert plan_args[3:] == (4, 2, 16, 4)  # heads q/kv, head dim, page size
    assert plan_kwargs["q_data_type"] == torch.bfloat16 and plan_kwargs["sm_scale"] == pytest.approx(0.25)
    assert torch.equal(plan_args[0], inp.kv_indptr) and torch.equal(plan_args[2], inp.last_page_len)


@pytest.mark.parametrize("flag, pdl", [("", False), (" --enable_pdl", True)])
def test_wrappers_run_as_flashinfers_benchmark_runs_them(fake_flashinfer, capsys, fake_timer, flag, pdl):
    """One output tensor for every call of a backend (run() would allocate one per call), and programmatic
    dependent launch forced off unless --enable_pdl, as FlashInfer's benchmark calls its wrappers."""
    args = parse_case(DECODE.split())
    inp = attention.make_inputs(args, torch.device("cpu"))
    FakeDecodeWrapper.answer = staticmethod(lambda q, kv: attention.torch_attention(inp, args, torch.bfloat16))
    assert main(f"{DECODE} --backends fa2 --refcheck{flag}".split(), timer=fake_timer) == 0, capsys.readouterr().out
    (fa2,) = FakeDecodeWrapper.instances
    outs = [run["out"] for run in fa2.runs]
    assert len(outs) == 2 and outs[0] is outs[1]  # the refcheck's call and the timer's
    assert outs[0].shape == (args.batch_size, args.num_qo_heads, args.head_dim_vo)
    assert {run["enable_pdl"] for run in fa2.runs} == {pdl}


def test_wrong_flashinfer_output_is_caught_by_refcheck(fake_flashinfer, capsys, fake_timer):
    FakeDecodeWrapper.answer = staticmethod(lambda q, kv: torch.zeros(q.shape[0], q.shape[1], 16))
    assert main(f"{DECODE} --backends fa2 --refcheck".split(), timer=fake_timer) == 1
    assert "[ERROR] Output mismatch between backends fa2 and reference" in capsys.readouterr().out
    assert not fake_timer.calls


def test_failing_backend_is_reported_and_others_still_run(fake_flashinfer, capsys, fake_timer):
    def boom(q, kv):
        raise RuntimeError("kernel not compiled for this GPU")

    FakeDecodeWrapper.answer = staticmethod(boom)
    assert main(f"{DECODE} --backends fa2 torch".split(), timer=fake_timer) == 1
    out = capsys.readouterr().out
    assert "[ERROR] fa2 failed on BatchDecodeWithPagedKVCacheWrapper: RuntimeError: kernel not compiled" in out
    assert "[PERF] torch" in out
