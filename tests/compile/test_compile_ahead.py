"""compile/ahead.py: which solutions a build ahead of their turn helps, and when the cache already has their build."""

import os

import pytest

from flashinfer_bench.compile.ahead import compiled_subdir, worth_building_ahead
from flashinfer_bench.compile.builders.native import library_name
from flashinfer_bench.compile.cache import solution_dir
from flashinfer_bench.data import Solution


def solution(language: str, path: str, **spec: str) -> Solution:
    return Solution.model_validate({
        "name": f"{language}_sol", "definition": "scale_add", "author": "tests",
        "spec": {"language": language, "target_hardware": ["cpu"], "entry_point": f"{path}::run", **spec},
        "sources": [{"path": path, "content": "// nothing\n"}]})


@pytest.mark.parametrize(("language", "path", "spec", "subdir"), [
    ("cpp", "main.cpp", {"binding": "torch"}, ".torch_ext"),
    ("cuda", "main.cu", {"binding": "tvm-ffi"}, ".tvm_ffi"),
    ("cpp", "main.cpp", {}, ".tvm_ffi"),  # no binding: TVM-FFI, as upstream builds it
    ("python", "main.py", {}, None),
    ("triton", "main.py", {}, None),  # compiled at its first launch, on the device
])
def test_only_solutions_built_by_a_compiler_are_built_ahead(tmp_path, language, path, spec, subdir):
    built = solution(language, path, **spec)
    assert compiled_subdir(built) == subdir
    assert worth_building_ahead(built, tmp_path) == (subdir is not None)


def test_a_finished_build_in_the_cache_is_not_built_again_and_a_planted_link_is_not_one(tmp_path):
    built = solution("cpp", "main.cpp", binding="torch")
    build_dir = solution_dir(built, tmp_path) / ".torch_ext"
    build_dir.mkdir(parents=True)
    marker = build_dir / f"{library_name(built)}.artifact"
    os.symlink("/dev/zero", marker)  # never read: a link is no finished build
    assert worth_building_ahead(built, tmp_path)
    marker.unlink()
    marker.write_text("lib.so 0123")
    assert not worth_building_ahead(built, tmp_path)
