"""Triton solutions on the CPU (through Triton's interpreter) and how compile errors are recognised.

Triton reads TRITON_INTERPRET when a kernel is defined, so each case runs in a fresh interpreter
with the environment it needs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import child_env

from flashinfer_bench.compile import BuildError, is_compile_error

pytest.importorskip("triton")


KERNEL = """
import torch
import triton
import triton.language as tl
from .launch import BLOCK


@triton.jit
def _scale_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * 2 + y, mask=mask)


def run(x, y, out):
    n = x.numel()
    _scale_add[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
"""


def run_python(
    code: str, env_updates: dict[str, str | None], folder: Path
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` as a script file (Triton wants kernels defined in real files) in a fresh interpreter."""
    script = folder / "script.py"
    script.write_text(textwrap.dedent(code))
    env = child_env()
    for key, value in env_updates.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True)


@pytest.mark.parametrize("interpret", ["1", None], ids=["worker-set-TRITON_INTERPRET", "builder-sets-it"])
def test_triton_kernel_runs_under_the_interpreter_on_cpu_tensors(
    tmp_path: Path, interpret: str | None
) -> None:
    solution = {
        "name": "triton_scale_add",
        "definition": "scale_add",
        "author": "tests",
        "spec": {
            "language": "triton",
            "target_hardware": ["cpu"],
            "entry_point": "main.py::run",
            "dependencies": ["triton >= 3.0", "torch"],
        },
        "sources": [{"path": "main.py", "content": KERNEL}, {"path": "launch.py", "content": "BLOCK = 4\n"}],
    }
    (tmp_path / "solution.json").write_text(json.dumps(solution))
    result = run_python(
        f"""
        import torch
        from flashinfer_bench.compile import build_solution
        from flashinfer_bench.data import Solution
        solution = Solution.model_validate_json(open({str(tmp_path / "solution.json")!r}).read())
        runnable = build_solution(solution, device="cpu", cache_dir={str(tmp_path / "cache")!r})
        x, y = torch.arange(10, dtype=torch.float32), torch.ones(10)
        out = torch.zeros(10)
        runnable.fn(x, y, out)
        assert torch.equal(out, x * 2 + y), out
        print("ok", runnable.destination_passing_style)
        """,
        {"TRITON_INTERPRET": interpret},
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["ok", "True"]


def test_a_real_triton_compilation_error_is_a_compile_error(tmp_path: Path) -> None:
    result = run_python(
        """
        import triton
        import triton.language as tl
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
        from flashinfer_bench.compile import is_compile_error

        @triton.jit
        def broken(x_ptr):
            tl.store(x_ptr, undefined_name + 1)

        try:
            triton.compile(ASTSource(fn=broken, signature={"x_ptr": "*fp32"}, constexprs={}),
                           target=GPUTarget("cuda", 80, 32))
        except Exception as exc:
            wrapped = RuntimeError("launch failed")
            wrapped.__cause__ = exc
            print(type(exc).__name__, is_compile_error(exc), is_compile_error(wrapped))
        """,
        {"TRITON_INTERPRET": None},
        tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["CompilationError", "True", "True"]


def test_other_exceptions_are_not_compile_errors_but_build_errors_are() -> None:
    assert is_compile_error(BuildError("nvcc failed", log="..."))
    assert not is_compile_error(RuntimeError("CUDA error: illegal memory access"))
    assert not is_compile_error(ValueError("bad shape"))


def test_undefined_language_name_is_a_build_error(tmp_path):
    from flashinfer_bench.compile import build_solution
    from flashinfer_bench.data import Solution

    source = (
        "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x_ptr):\n"
        "    tl.store(x_ptr, tl.no_such_function(1.0))\n\ndef run(x):\n    k[(1,)](x)\n"
    )
    solution = Solution.model_validate({
        "name": "bad_tl", "definition": "d", "author": "t",
        "spec": {"language": "triton", "target_hardware": ["cpu"], "entry_point": "main.py::run"},
        "sources": [{"path": "main.py", "content": source}],
    })
    with pytest.raises(BuildError, match=r"main.py:6: tl.no_such_function"):
        build_solution(solution, device="cpu", cache_dir=tmp_path)
