"""Python solutions: both calling styles, multi-file sources, import failures, dependencies, the cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from helpers import child_env

from flashinfer_bench.compile import BuildError, build_reference, build_solution, cache
from flashinfer_bench.compile.builders.python import build_python
from flashinfer_bench.compile.builders.torch_ext import build_torch_extension
from flashinfer_bench.compile.builders.triton import build_triton
from flashinfer_bench.compile.builders.tvm_ffi import build_tvm_ffi
from flashinfer_bench.compile.dependencies import dependency_name
from flashinfer_bench.compile.registry import find_builder
from flashinfer_bench.data import Definition, Solution


def make_solution(sources: dict[str, str], entry: str = "main.py::run", **spec: Any) -> Solution:
    return Solution.model_validate(
        {
            "name": "sol",
            "definition": "scale_add",
            "author": "tests",
            "spec": {"language": "python", "target_hardware": ["cpu"], "entry_point": entry, **spec},
            "sources": [{"path": path, "content": content} for path, content in sources.items()],
        }
    )


def test_value_returning_solution_returns_outputs(tmp_path: Path) -> None:
    solution = make_solution(
        {"main.py": "def run(x, y):\n    return x * 2 + y\n"}, destination_passing_style=False
    )
    runnable = build_solution(solution, device="cpu", cache_dir=tmp_path)
    assert runnable.destination_passing_style is False
    assert runnable.build_log == ""
    x, y = torch.ones(3), torch.arange(3.0)
    assert torch.equal(runnable.fn(x, y), x * 2 + y)


def test_a_top_level_setup_is_the_solutions_setup(tmp_path: Path) -> None:
    with_setup = make_solution({"main.py": "def setup(**layout):\n    return {'k': 2}\n"
                                           "def run(x, y, out, k):\n    out.copy_(x * k + y)\n"})
    runnable = build_solution(with_setup, device="cpu", cache_dir=tmp_path)
    assert runnable.setup is not None and runnable.setup() == {"k": 2}
    assert build_solution(make_solution({"main.py": "def run(x, y, out):\n    pass\n"}), cache_dir=tmp_path).setup is None
    not_a_function = make_solution({"main.py": "setup = 3\ndef run(x, y, out):\n    pass\n"})
    with pytest.raises(BuildError, match="defines 'setup', but it is not a function"):
        build_solution(not_a_function, device="cpu", cache_dir=tmp_path)


def test_destination_passing_solution_writes_into_outputs(tmp_path: Path) -> None:
    solution = make_solution({"main.py": "def run(x, y, out):\n    out.copy_(x * 2 + y)\n"})
    runnable = build_solution(solution, device="cpu", cache_dir=tmp_path)
    assert runnable.destination_passing_style is True
    x, y, out = torch.ones(3), torch.arange(3.0), torch.empty(3)
    assert runnable(x, y, out) is None
    assert torch.equal(out, x * 2 + y)


def test_files_import_each_other_relatively_absolutely_and_from_subfolders(tmp_path: Path) -> None:
    solution = make_solution(
        {
            "main.py": (
                "from .helper import TWO\nimport helper\nfrom kernels.scale import scale\n"
                "def run(x):\n    return scale(x) + TWO + helper.TWO\n"
            ),
            "helper.py": "TWO = 2\n",
            "kernels/scale.py": "from .factor import FACTOR\ndef scale(x):\n    return x * FACTOR\n",
            "kernels/factor.py": "FACTOR = 10\n",
        }
    )
    runnable = build_solution(solution, device="cpu", cache_dir=tmp_path)
    assert runnable.fn(1) == 14


def test_entry_file_in_a_subfolder(tmp_path: Path) -> None:
    solution = make_solution(
        {
            "pkg/entry.py": "from .util import f\ndef go():\n    return f()\n",
            "pkg/util.py": "def f():\n    return 7\n",
        },
        entry="pkg/entry.py::go",
    )
    assert build_solution(solution, device="cpu", cache_dir=tmp_path).fn() == 7


def test_same_helper_name_in_two_solutions_does_not_leak_between_them(tmp_path: Path) -> None:
    def with_helper(value: int) -> Solution:
        return make_solution(
            {
                "main.py": "import helper\ndef run():\n    return helper.VALUE\n",
                "helper.py": f"VALUE = {value}\n",
            }
        )

    first = build_solution(with_helper(1), device="cpu", cache_dir=tmp_path)
    second = build_solution(with_helper(2), device="cpu", cache_dir=tmp_path)
    assert (first.fn(), second.fn()) == (1, 2)


def test_sources_land_in_a_content_addressed_folder_and_a_rebuild_is_cached(tmp_path: Path) -> None:
    solution = make_solution({"main.py": "def run():\n    return 1\n"})
    first = build_solution(solution, device="cpu", cache_dir=tmp_path)
    expected = tmp_path / "python" / solution.content_hash()[:20]
    assert first.source_dir == expected
    assert (expected / "main.py").read_text() == "def run():\n    return 1\n"
    assert first.cached is False
    assert build_solution(solution, device="cpu", cache_dir=tmp_path).cached is True
    assert [p.name for p in (tmp_path / "python").iterdir()] == [expected.name]  # no staging leftovers


def test_cache_dir_defaults_to_the_environment_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLASHINFER_BENCH_CACHE_DIR", str(tmp_path / "from-env"))
    solution = make_solution({"main.py": "def run():\n    return 'env'\n"})
    runnable = build_solution(solution, device="cpu")
    assert runnable.source_dir is not None and runnable.source_dir.is_relative_to(tmp_path / "from-env")


def test_concurrent_processes_building_the_same_solution_all_succeed(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from flashinfer_bench.data import Solution\n"
        "from flashinfer_bench.compile import build_solution\n"
        "sol = Solution.model_validate_json(open(sys.argv[1]).read())\n"
        "print(build_solution(sol, 'cpu', cache_dir=sys.argv[2]).fn())\n"
    )
    files = {f"mod{i}.py": f"X = {i}\n" * 2000 for i in range(20)}
    files["main.py"] = "import mod19\ndef run():\n    return mod19.X\n"
    solution = make_solution(files)
    solution_json = tmp_path / "solution.json"
    solution_json.write_text(solution.model_dump_json())
    cache = tmp_path / "cache"
    env = child_env()
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(solution_json), str(cache)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    results = [p.communicate(timeout=120) for p in processes]
    assert [p.returncode for p in processes] == [0] * 4, [err for _, err in results]
    assert [out.strip() for out, _ in results] == ["19"] * 4
    assert len(list((cache / "python").iterdir())) == 1


def test_a_process_that_loses_the_rename_race_uses_the_winners_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    solution = make_solution({"main.py": "def run():\n    return 'mine'\n"})
    real_rename = os.rename

    def another_process_wins(src: str, dst: str) -> None:
        winner = Path(dst)
        winner.mkdir()
        (winner / "main.py").write_text("def run():\n    return 'mine'\n")
        real_rename(src, dst)

    monkeypatch.setattr(cache.os, "rename", another_process_wins)
    directory, existed = cache.materialize_sources(solution, tmp_path)
    assert existed is True
    assert [p.name for p in directory.parent.iterdir()] == [directory.name]


def test_syntax_error_is_a_build_error_with_the_traceback(tmp_path: Path) -> None:
    solution = make_solution({"main.py": "def run(x):\n    return x +\n"})
    with pytest.raises(BuildError) as caught:
        build_solution(solution, device="cpu", cache_dir=tmp_path)
    assert "SyntaxError" in str(caught.value)
    assert "Traceback" in caught.value.log and "main.py" in caught.value.log
    package = f"fib_python_{solution.content_hash()[:20]}"
    assert not [name for name in sys.modules if name.startswith(package)]


def test_error_raised_at_import_and_missing_module_are_build_errors(tmp_path: Path) -> None:
    raising = make_solution({"main.py": "raise RuntimeError('boom at import')\ndef run():\n    pass\n"})
    with pytest.raises(BuildError, match="boom at import") as caught:
        build_solution(raising, device="cpu", cache_dir=tmp_path)
    assert "RuntimeError" in caught.value.log
    missing = make_solution({"main.py": "import no_such_module_anywhere\ndef run():\n    pass\n"})
    with pytest.raises(BuildError, match="no_such_module_anywhere"):
        build_solution(missing, device="cpu", cache_dir=tmp_path)


def test_missing_entry_function_is_a_build_error(tmp_path: Path) -> None:
    solution = make_solution({"main.py": "def other():\n    pass\nrun = 3\n"})
    with pytest.raises(BuildError, match="defines no function 'run'"):
        build_solution(solution, device="cpu", cache_dir=tmp_path)


def test_missing_python_dependency_is_named(tmp_path: Path) -> None:
    solution = make_solution(
        {"main.py": "def run():\n    pass\n"},
        dependencies=["torch", "CUDA >= 12.0", "definitely-not-installed-pkg >= 1.0"],
    )
    with pytest.raises(BuildError, match="missing dependencies: definitely-not-installed-pkg"):
        build_solution(solution, device="cpu", cache_dir=tmp_path)


def test_installed_dependencies_with_version_constraints_pass(tmp_path: Path) -> None:
    solution = make_solution(
        {"main.py": "def run():\n    return 'ok'\n"},
        dependencies=["torch", "triton >= 3.0", "numpy==1.0", "cutlass"],
    )
    assert build_solution(solution, device="cpu", cache_dir=tmp_path).fn() == "ok"


@pytest.mark.parametrize(
    ("requirement", "name"),
    [
        ("torch", "torch"),
        ("triton >= 3.0", "triton"),
        ("numpy==1.26", "numpy"),
        (" apache-tvm-ffi>=0.1", "apache-tvm-ffi"),
    ],
)
def test_dependency_name_is_parsed_from_a_requirement(requirement: str, name: str) -> None:
    assert dependency_name(requirement) == name


@pytest.mark.parametrize(
    ("language", "binding", "builder"),
    [
        ("python", None, build_python),
        ("tilelang", None, build_python),
        ("triton", None, build_triton),
        ("cpp", None, build_tvm_ffi),  # upstream's default for C++/CUDA
        ("cuda", None, build_tvm_ffi),
        ("cuda", "torch", build_torch_extension),
        ("cuda", "tvm-ffi", build_tvm_ffi),
        ("cpp", "tvm-ffi", build_tvm_ffi),
    ],
)
def test_registry_picks_the_builder_by_language_and_binding(
    language: str, binding: str | None, builder: Any
) -> None:
    entry = "main.py::run" if language in ("python", "tilelang", "triton") else "main.cpp::run"
    spec = make_solution({entry.split("::")[0]: "pass"}, entry=entry, language=language, binding=binding).spec
    assert find_builder(spec) is builder


def _definition(reference: str) -> Definition:
    return Definition.model_validate(
        {
            "name": "scale_add",
            "op_type": "elementwise",
            "axes": {"n": {"type": "var"}},
            "inputs": {"x": {"shape": ["n"], "dtype": "float32"}},
            "outputs": {"out": {"shape": ["n"], "dtype": "float32"}},
            "reference": reference,
        }
    )


def test_build_reference_returns_run() -> None:
    run = build_reference(_definition("import torch\n\ndef run(x):\n    return x * 2\n"))
    assert torch.equal(run(torch.ones(2)), torch.full((2,), 2.0))


def test_reference_that_fails_to_import_is_a_build_error_with_source_lines() -> None:
    with pytest.raises(BuildError, match="ZeroDivisionError") as caught:
        build_reference(_definition("BROKEN = 1 / 0\n\ndef run(x):\n    return x\n"))
    assert "BROKEN = 1 / 0" in caught.value.log


def test_importing_the_package_imports_neither_torch_nor_triton() -> None:
    code = "import sys, flashinfer_bench.compile; print('torch' in sys.modules, 'triton' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code],
        env=child_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.split() == ["False", "False"]


def test_a_poisoned_cache_entry_is_set_aside_and_never_reused(tmp_path: Path) -> None:
    solution = make_solution({"main.py": "def run():\n    return 1\n"})
    folder = build_solution(solution, device="cpu", cache_dir=tmp_path).source_dir
    (folder / "main.py").write_text("def run():\n    return 666\n")  # what a hostile solution could do
    code = (
        "import sys\nfrom flashinfer_bench.compile import build_solution\nfrom flashinfer_bench.data import Solution\n"
        f"solution = Solution.model_validate_json({solution.model_dump_json()!r})\n"
        f"runnable = build_solution(solution, device='cpu', cache_dir={str(tmp_path)!r})\n"
        "print(runnable.fn(), runnable.cached)\n"
    )
    fresh = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=child_env())
    assert fresh.stdout.split() == ["1", "False"], fresh.stderr  # rebuilt from the solution, not the poisoned file
    assert (folder / "main.py").read_text() == "def run():\n    return 1\n"
    assert any(".changed." in p.name for p in folder.parent.iterdir())  # the changed entry is kept aside


def test_a_changed_built_library_is_not_loaded(tmp_path: Path) -> None:
    build_dir = tmp_path / "build"
    build_dir.mkdir()
    library = build_dir / "lib.so"
    library.write_bytes(b"built")
    cache.record_artifact(build_dir, "lib", library)
    assert cache.read_artifact(build_dir, "lib") == library
    library.write_bytes(b"swapped")
    assert cache.read_artifact(build_dir, "lib") is None
    (build_dir / "lib.artifact").write_text("lib.so")  # a marker from before digests were recorded
    assert cache.read_artifact(build_dir, "lib") is None
