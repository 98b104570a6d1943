"""Builds in a real worker's file system view (worker/sandbox/view.py): a C++ torch extension (the compiler, ninja,
torch's headers), a Triton kernel (its interpreter, on the CPU) and a tvm-ffi library are built and pass in the
sandbox, and a second run builds from the cache entry the parent copies into the worker's scratch directory."""

from __future__ import annotations

import importlib.util

import pytest
from helpers import SCALE_ADD, workload_line, write_trace_set

from flashinfer_bench.bench import Benchmark, BenchmarkConfig
from flashinfer_bench.bench.runner import persistent_runner
from flashinfer_bench.compile.cache import solution_dir
from flashinfer_bench.data import Solution, TraceSet

pytest.importorskip("triton")

TORCH_EXTENSION = r"""
#include <torch/extension.h>
void run(torch::Tensor x, torch::Tensor y, torch::Tensor out) { out.copy_(x * 2 + y); }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &run); }
"""

TRITON = """
import triton
import triton.language as tl


@triton.jit
def _scale_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2 + tl.load(y_ptr + offsets, mask=mask),
             mask=mask)


def run(x, y, out):
    _scale_add[(triton.cdiv(x.numel(), 64),)](x, y, out, x.numel(), BLOCK=64)
"""

TVM_FFI = r"""
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

void run(tvm::ffi::TensorView x, tvm::ffi::TensorView y, tvm::ffi::TensorView out) {
    const float* a = static_cast<const float*>(x.data_ptr());
    const float* b = static_cast<const float*>(y.data_ptr());
    float* result = static_cast<float*>(out.data_ptr());
    for (int64_t i = 0; i < x.size(0); ++i) result[i] = a[i] * 2 + b[i];
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, run);
"""


def solution(name: str, language: str, path: str, content: str, **spec: str) -> dict:
    return {"name": name, "definition": "scale_add", "author": "tests",
            "spec": {"language": language, "target_hardware": ["cpu"], "entry_point": f"{path}::run",
                     "destination_passing_style": True, **spec},
            "sources": [{"path": path, "content": content}]}


@pytest.mark.slow
def test_native_and_triton_solutions_build_and_pass_in_the_view(tmp_path):
    solutions = [solution("torch_ext", "cpp", "main.cpp", TORCH_EXTENSION, binding="torch"),
                 solution("triton", "triton", "main.py", TRITON)]
    if importlib.util.find_spec("tvm_ffi") is not None:
        solutions.append(solution("tvm_ffi", "cpp", "main.cpp", TVM_FFI, binding="tvm-ffi"))
    root = write_trace_set(tmp_path / "set", [SCALE_ADD], solutions,
                           {"scale_add": [workload_line("scale_add", "w64", {"n": 64})]})
    cache = tmp_path / "cache"
    config = BenchmarkConfig(iterations=4, warmup_runs=1, num_trials=1, timeout_seconds=60)

    def run() -> dict:
        benchmark = Benchmark(TraceSet.from_path(root), config, runner_factory=lambda c: persistent_runner(
            ["cpu"], timeout_seconds=c.timeout_seconds, cache_dir=str(cache)))
        traces = benchmark.run_all(save_results=False).traces["scale_add"]
        return {t.solution: (t.evaluation.status.value, t.evaluation.log) for t in traces}

    first = run()
    assert {name: status for name, (status, _) in first.items()} == {s["name"]: "PASSED" for s in solutions}, first
    native = Solution.model_validate(solutions[0])
    built = sorted(p.name for p in solution_dir(native, cache).rglob("*.artifact"))
    assert built, "the torch extension's build was not moved into the cache"
    second = run()  # the entry, copied into the new worker's scratch, is used as it is
    assert {name: status for name, (status, _) in second.items()} == {s["name"]: "PASSED" for s in solutions}
