"""C++ solutions built as torch extensions with the real compiler, the build cache, and toolchain errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from helpers import child_env

from flashinfer_bench.compile import BuildError, build_solution
from flashinfer_bench.data import Solution

SCALE_ADD_CPP = r"""
#include <torch/extension.h>
#include "scale.h"

void scale_add(torch::Tensor x, torch::Tensor y, torch::Tensor out) {
    out.copy_(x * kScale + y);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("scale_add", &scale_add);
}
"""

# Reported by the second, fresh process; load() is replaced so that any attempt to compile fails loudly.
CACHED_BUILD_SCRIPT = """
import json, sys, time
import torch
import torch.utils.cpp_extension as cpp_extension
from flashinfer_bench.compile import build_solution
from flashinfer_bench.data import Solution

def no_compiling(*args, **kwargs):
    raise AssertionError("the cached build ran the compiler")

cpp_extension.load = no_compiling
solution = Solution.model_validate_json(open(sys.argv[1]).read())
started = time.perf_counter()
runnable = build_solution(solution, device="cpu", cache_dir=sys.argv[2])
seconds = time.perf_counter() - started
x, y, out = torch.arange(4.0), torch.ones(4), torch.empty(4)
runnable.fn(x, y, out)
print(json.dumps({"cached": runnable.cached, "seconds": seconds, "out": out.tolist()}))
"""


def make_solution(sources: dict[str, str], entry: str, **spec: Any) -> Solution:
    return Solution.model_validate(
        {
            "name": "cpp_sol",
            "definition": "scale_add",
            "author": "tests",
            "spec": {"language": "cpp", "target_hardware": ["cpu"], "entry_point": entry, **spec},
            "sources": [{"path": path, "content": content} for path, content in sources.items()],
        }
    )


def test_cpp_extension_builds_runs_and_a_fresh_process_loads_it_from_the_cache(tmp_path: Path) -> None:
    solution = make_solution(
        {"main.cpp": SCALE_ADD_CPP, "scale.h": "constexpr double kScale = 2.0;\n"},
        entry="main.cpp::scale_add",
        binding="torch",
    )
    first = build_solution(solution, device="cpu", cache_dir=tmp_path)
    assert first.cached is False
    assert "compiled 1 source file(s)" in first.build_log
    x, y, out = torch.arange(4.0), torch.ones(4), torch.empty(4)
    first.fn(x, y, out)
    assert torch.equal(out, x * 2 + y)
    assert build_solution(solution, device="cpu", cache_dir=tmp_path).cached is True  # same process

    (tmp_path / "solution.json").write_text(solution.model_dump_json())
    result = subprocess.run(
        [sys.executable, "-c", CACHED_BUILD_SCRIPT, str(tmp_path / "solution.json"), str(tmp_path)],
        env=child_env(),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["cached"] is True
    assert report["out"] == [1.0, 3.0, 5.0, 7.0]
    print(f"first build {first.build_log}; cached build in a fresh process {report['seconds'] * 1000:.1f} ms")


def test_compiler_errors_are_build_errors_carrying_the_compiler_message(tmp_path: Path) -> None:
    # No torch headers, so the real compiler fails in well under a second.
    broken = "int scale_add(int x) {\n    return x * undeclared_factor;\n}\n"
    solution = make_solution({"main.cpp": broken}, entry="main.cpp::scale_add")
    with pytest.raises(BuildError) as caught:
        build_solution(solution, device="cpu", cache_dir=tmp_path)
    message, log = str(caught.value), caught.value.log
    assert message.startswith("compilation failed: ")
    assert "main.cpp:2" in message and "error:" in message and "undeclared_factor" in message
    assert "undeclared_factor" in log and "error:" in log
    assert len(log) <= 20_100


def test_cuda_sources_without_nvcc_are_a_build_error_that_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "no-cuda-here"))
    solution = make_solution(
        {"kernel.cu": "__global__ void k() {}\n"}, entry="kernel.cu::run", language="cuda", binding="torch"
    )
    with pytest.raises(BuildError, match="nvcc"):
        build_solution(solution, device="cuda:0", cache_dir=tmp_path / "cache")


@pytest.mark.skipif(torch.version.cuda is not None, reason="this torch is built with CUDA")
def test_cuda_sources_with_a_cpu_only_torch_are_a_build_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_cuda = tmp_path / "cuda"
    (fake_cuda / "bin").mkdir(parents=True)
    (fake_cuda / "bin" / "nvcc").write_text("#!/bin/sh\nexit 1\n")
    monkeypatch.setenv("CUDA_HOME", str(fake_cuda))
    solution = make_solution(
        {"kernel.cu": "__global__ void k() {}\n"}, entry="kernel.cu::run", language="cuda", binding="torch"
    )
    with pytest.raises(BuildError, match="CPU-only"):
        build_solution(solution, device="cpu", cache_dir=tmp_path / "cache")


def test_sources_without_a_translation_unit_are_a_build_error(tmp_path: Path) -> None:
    solution = make_solution({"main.h": "int f();\n"}, entry="main.h::f")
    with pytest.raises(BuildError, match="no C/C\\+\\+"):
        build_solution(solution, device="cpu", cache_dir=tmp_path)
