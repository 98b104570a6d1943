"""C++ solutions with the tvm-ffi binding: a clear error without apache-tvm-ffi, a real build with it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from flashinfer_bench.compile import BuildError, build_solution
from flashinfer_bench.data import Solution

HAVE_TVM_FFI = importlib.util.find_spec("tvm_ffi") is not None

ADD_ONE_CPP = r"""
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/function.h>

void add_one(tvm::ffi::TensorView x, tvm::ffi::TensorView out) {
    const float* in = static_cast<const float*>(x.data_ptr());
    float* result = static_cast<float*>(out.data_ptr());
    for (int64_t i = 0; i < x.size(0); ++i) result[i] = in[i] + 1.0f;
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(add_one, add_one);
"""


def make_solution(content: str) -> Solution:
    return Solution.model_validate(
        {
            "name": "tvm_ffi_add_one",
            "definition": "add_one",
            "author": "tests",
            "spec": {
                "language": "cpp",
                "target_hardware": ["cpu"],
                "entry_point": "main.cpp::add_one",
                "binding": "tvm-ffi",
            },
            "sources": [{"path": "main.cpp", "content": content}],
        }
    )


def test_without_apache_tvm_ffi_the_error_names_what_to_install(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "tvm_ffi", None)  # makes `import tvm_ffi` fail as if not installed
    with pytest.raises(BuildError, match="pip install apache-tvm-ffi"):
        build_solution(make_solution(ADD_ONE_CPP), device="cpu", cache_dir=tmp_path)


@pytest.mark.skipif(not HAVE_TVM_FFI, reason="apache-tvm-ffi is not installed")
def test_tvm_ffi_library_builds_runs_on_torch_tensors_and_is_cached(tmp_path: Path) -> None:
    solution = make_solution(ADD_ONE_CPP)
    first = build_solution(solution, device="cpu", cache_dir=tmp_path)
    assert first.cached is False
    x, out = torch.arange(3.0), torch.empty(3)
    first.fn(x, out)
    assert out.tolist() == [1.0, 2.0, 3.0]
    assert build_solution(solution, device="cpu", cache_dir=tmp_path).cached is True


@pytest.mark.skipif(not HAVE_TVM_FFI, reason="apache-tvm-ffi is not installed")
def test_tvm_ffi_compile_error_carries_the_compiler_message(tmp_path: Path) -> None:
    with pytest.raises(BuildError, match="error:") as caught:
        build_solution(make_solution(ADD_ONE_CPP + "int broken = ;\n"), device="cpu", cache_dir=tmp_path)
    assert "int broken = ;" in caught.value.log
