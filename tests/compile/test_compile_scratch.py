"""Building with a read-only cache root and a private scratch root, and promoting what a worker built.

A sandboxed worker may not write the cache root: it builds under its scratch root, in the cache's layout, and
a trusted process promotes that entry into the cache once the worker has exited (``cache.promote_entry``).
"""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
import textwrap
import traceback
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import child_env

from flashinfer_bench.bench.worker.sandbox import SandboxPolicy, enter_sandbox, probe_isolation
from flashinfer_bench.compile import BuildContext, build_solution, cache, promote_entry
from flashinfer_bench.compile.builders.native import NativeSources, build_native
from flashinfer_bench.compile.cache import solution_dir
from flashinfer_bench.data import Solution

IS_ROOT = os.geteuid() == 0
BUILD_SUBDIR = ".fake_build"


def make_solution(body: str = "return 1", language: str = "python", entry: str = "main.py::run",
                  extra: dict[str, str] | None = None) -> Solution:
    """A solution of content no other test builds (so no import of an earlier test answers for it)."""
    sources = {entry.split("::")[0]: f"# {uuid.uuid4().hex}\ndef run():\n    {body}\n", **(extra or {})}
    return Solution.model_validate({
        "name": "sol", "definition": "d", "author": "tests",
        "spec": {"language": language, "target_hardware": ["cpu"], "entry_point": entry},
        "sources": [{"path": path, "content": content} for path, content in sources.items()],
    })


def snapshot(root: Path) -> list[tuple[str, int, bytes | None]]:
    """Every path under ``root`` with its mode and, for a regular file, its content."""
    return sorted(
        (str(path.relative_to(root)), path.lstat().st_mode,
         path.read_bytes() if path.is_file() and not path.is_symlink() else None)
        for path in root.rglob("*")
    )


class Sealer:
    """Makes a cache root's folders 0555 when the tests do not run as root (root writes them anyway: the tests
    then check that nothing under it changed), and writable again for the trusted promoter."""

    def __init__(self) -> None:
        self.folders: list[Path] = []

    def seal(self, root: Path) -> None:
        if not IS_ROOT:
            self.folders = [root, *(p for p in root.rglob("*") if p.is_dir() and not p.is_symlink())]
            for folder in self.folders:
                folder.chmod(0o555)

    def unseal(self) -> None:
        for folder in self.folders:
            folder.chmod(0o755)


@pytest.fixture
def sealer() -> Iterator[Sealer]:
    sealer = Sealer()
    yield sealer
    sealer.unseal()


@pytest.fixture
def read_only_cache(tmp_path: Path) -> Path:
    root = tmp_path / "cache"
    root.mkdir()
    return root


# --- python: reading a verified entry in place, building into scratch ------------------------------------


def test_a_verified_cache_entry_is_used_where_it_is_and_nothing_is_written(
    tmp_path: Path, read_only_cache: Path, sealer: Sealer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # as without PYTHONDONTWRITEBYTECODE
    solution = make_solution("return 'cached'")
    entry, existed = cache.materialize_sources(solution, read_only_cache)
    assert not existed
    sealer.seal(read_only_cache)
    before = snapshot(read_only_cache)
    scratch = tmp_path / "scratch"
    runnable = build_solution(solution, cache_dir=read_only_cache, scratch_dir=scratch)
    assert runnable.fn() == "cached"
    assert runnable.cached is True and runnable.source_dir == entry
    assert snapshot(read_only_cache) == before  # no __pycache__ either
    assert not scratch.exists()


def test_without_a_cache_entry_the_sources_are_built_in_scratch(
    tmp_path: Path, read_only_cache: Path, sealer: Sealer
) -> None:
    sealer.seal(read_only_cache)
    solution = make_solution("return 'scratch'")
    scratch = tmp_path / "scratch"
    runnable = build_solution(solution, cache_dir=read_only_cache, scratch_dir=scratch)
    assert runnable.fn() == "scratch"
    assert runnable.cached is False
    assert runnable.source_dir == solution_dir(solution, scratch)
    assert runnable.source_dir == scratch / "python" / solution.content_hash()[:20]
    assert snapshot(read_only_cache) == []


def test_a_promoted_entry_is_reused_and_a_poisoned_one_is_not(tmp_path: Path) -> None:
    solution, cache_root = make_solution(), tmp_path / "cache"
    first = build_solution(solution, cache_dir=cache_root, scratch_dir=tmp_path / "scratch1")
    assert first.cached is False and not cache_root.exists()
    assert promote_entry(solution, tmp_path / "scratch1", cache_root) is True
    entry = solution_dir(solution, cache_root)
    assert (entry / "main.py").is_file() and not first.source_dir.exists()  # moved, not copied

    context = BuildContext("cpu", cache_root, tmp_path / "scratch2")
    assert context.sources(solution) == (entry, True)
    assert not (tmp_path / "scratch2").exists()

    (entry / "main.py").write_text("def run():\n    return 666\n")  # what a hostile solution could have left
    assert context.sources(solution) == (solution_dir(solution, tmp_path / "scratch2"), False)  # not used
    assert (entry / "main.py").read_text() == "def run():\n    return 666\n"  # nor written: not ours to write
    directory, existed = BuildContext("cpu", cache_root).sources(solution)  # without a scratch root:
    assert (directory, existed) == (entry, False)  # set aside and written afresh, as before
    assert (entry / "main.py").read_text() == solution.sources[0].content
    assert any(".changed." in p.name for p in entry.parent.iterdir())


def test_a_sandboxed_build_writes_only_its_scratch(tmp_path: Path) -> None:
    """The real thing: in a sandbox where only the scratch root is writable (and the cache root, Python and
    this package are shown read-only), one solution is read from the cache root and another is built into
    scratch."""
    from flashinfer_bench.bench.runner.worker_view import python_paths

    cache_root, scratch = tmp_path / "cache", tmp_path / "scratch"
    scratch.mkdir()
    cached, fresh = make_solution("return 'cached'"), make_solution("return 'fresh'")
    cache.materialize_sources(cached, cache_root)
    policy = SandboxPolicy(read_only=(str(cache_root), *python_paths()), writable=(str(scratch),),
                           confine_writes=True)
    if not probe_isolation(policy).complete:
        pytest.skip(probe_isolation(policy).describe())
    before = snapshot(cache_root)
    read_fd, write_fd = os.pipe()
    with warnings.catch_warnings():  # Python >= 3.12 warns about forking pytest's threads (torch starts some)
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child reports over the pipe and never returns into pytest
        try:
            os.close(read_fd)
            try:
                enter_sandbox(policy)
                report: Any = [(str(r.source_dir), r.fn(), r.cached) for r in (
                    build_solution(s, cache_dir=cache_root, scratch_dir=scratch) for s in (cached, fresh))]
            except BaseException:
                report = traceback.format_exc()
            os.write(write_fd, json.dumps(report).encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        report = json.loads(pipe.read())
    os.waitpid(pid, 0)
    assert report == [[str(solution_dir(cached, cache_root)), "cached", True],
                      [str(solution_dir(fresh, scratch)), "fresh", False]]
    assert snapshot(cache_root) == before


# --- native builds: a fake compiler, so the flow is tested without one ------------------------------------


class FakeToolchain:
    """Compiles by writing a file named after the content; loads by reading it back."""

    def __init__(self) -> None:
        self.compiled: list[Path] = []
        self.loaded: list[Path] = []

    def compile(self, sources: NativeSources) -> Path:
        sources.build_dir.mkdir(parents=True, exist_ok=True)
        library = sources.build_dir / f"{sources.name}.so"
        library.write_text(sources.cpp[0].read_text())
        self.compiled.append(library)
        return library

    def load(self, path: Path, name: str) -> Any:
        self.loaded.append(path)
        return {"run": path.read_text}


def native(solution: Solution, context: BuildContext, toolchain: FakeToolchain) -> Any:
    return build_native(solution, context, BUILD_SUBDIR, toolchain.compile, toolchain.load)


def test_a_native_build_goes_to_scratch_is_promoted_later_and_then_loaded_without_compiling(
    tmp_path: Path, read_only_cache: Path, sealer: Sealer
) -> None:
    solution = make_solution(language="cpp", entry="main.cpp::run")
    entry = solution_dir(solution, read_only_cache)
    cache.materialize_sources(solution, read_only_cache)  # an entry promoted by a worker that did not finish
    sealer.seal(read_only_cache)
    before = snapshot(read_only_cache)
    toolchain = FakeToolchain()
    build = native(solution, BuildContext("cpu", read_only_cache, tmp_path / "scratch1"), toolchain)
    scratch_entry = solution_dir(solution, tmp_path / "scratch1")
    assert build.cached is False and build.directory == scratch_entry
    assert toolchain.compiled == [scratch_entry / BUILD_SUBDIR / f"fib_cpp_{entry.name}.so"]
    assert snapshot(read_only_cache) == before
    sealer.unseal()  # the trusted promoter may write it

    assert promote_entry(solution, tmp_path / "scratch1", read_only_cache) is True  # only the build is added
    assert sorted(p.name for p in entry.iterdir()) == sorted([BUILD_SUBDIR, "main.cpp"])
    assert promote_entry(solution, tmp_path / "scratch1", read_only_cache) is False  # nothing left to add

    again = native(solution, BuildContext("cpu", read_only_cache, tmp_path / "scratch2"), toolchain)
    assert again.cached is True and again.directory == entry
    assert toolchain.loaded[-1] == entry / BUILD_SUBDIR / f"fib_cpp_{entry.name}.so"
    assert len(toolchain.compiled) == 1 and not (tmp_path / "scratch2").exists()

    (entry / BUILD_SUBDIR / f"fib_cpp_{entry.name}.so").write_text("planted")  # fails its recorded SHA-256
    rebuilt = native(solution, BuildContext("cpu", read_only_cache, tmp_path / "scratch3"), toolchain)
    assert rebuilt.cached is False and rebuilt.directory == solution_dir(solution, tmp_path / "scratch3")
    assert rebuilt.library["run"]() == solution.sources[0].content


# --- promotion -------------------------------------------------------------------------------------------


def cross_file_systems(monkeypatch: pytest.MonkeyPatch, scratch: Path) -> None:
    """Renames out of ``scratch`` fail as they do across file systems."""
    real_rename = os.rename

    def rename(source: Any, target: Any) -> None:
        if Path(source).is_relative_to(scratch):
            raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))
        real_rename(source, target)

    monkeypatch.setattr(cache.os, "rename", rename)


@pytest.mark.parametrize("cached_entry", [False, True], ids=["new-entry", "existing-entry"])
@pytest.mark.parametrize("across", [False, True], ids=["rename", "copy"])
def test_promotion_moves_symlinks_as_symlinks_and_drops_special_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cached_entry: bool, across: bool
) -> None:
    solution, scratch, cache_root = make_solution(), tmp_path / "scratch", tmp_path / "cache"
    secret = tmp_path / "secret"
    (secret / "kernels").mkdir(parents=True)
    (secret / "kernels" / "k.bin").write_text("someone else's")
    if cached_entry:
        cache.materialize_sources(solution, cache_root)
    source, _ = cache.materialize_sources(solution, scratch)
    (source / ".triton").symlink_to(secret)  # planted: must never be followed
    (source / "build").mkdir()
    (source / "build" / "link").symlink_to(secret / "kernels" / "k.bin")
    (source / "build" / "tool").write_text("#!/bin/sh\n")
    (source / "build" / "tool").chmod(0o6777)
    os.mkfifo(source / "build" / "pipe")
    if across:
        cross_file_systems(monkeypatch, scratch)

    assert promote_entry(solution, scratch, cache_root) is True
    entry = solution_dir(solution, cache_root)
    assert os.readlink(entry / ".triton") == str(secret)
    assert os.readlink(entry / "build" / "link") == str(secret / "kernels" / "k.bin")
    assert sorted(p.name for p in (entry / "build").iterdir()) == ["link", "tool"]  # the FIFO is gone
    assert stat.S_IMODE((entry / "build" / "tool").stat().st_mode) == 0o755  # no set-id, no group/other write
    assert [p.relative_to(secret) for p in secret.rglob("*")] == [Path("kernels"), Path("kernels/k.bin")]
    assert (secret / "kernels" / "k.bin").read_text() == "someone else's"
    regular_files = {p.name for p in entry.rglob("*") if p.is_file() and not p.is_symlink()}
    assert regular_files == {"main.py", "tool"}  # nothing was read through a symlink
    assert not [p for p in entry.parent.iterdir() if p.name.startswith(".")]  # no staging left behind


def test_promotion_adds_a_later_triton_folder_and_never_replaces_anything(tmp_path: Path) -> None:
    solution, cache_root = make_solution(), tmp_path / "cache"
    entry, _ = cache.materialize_sources(solution, cache_root)
    for run, kernel in ((1, "first"), (2, "second")):
        scratch = tmp_path / f"scratch{run}"
        source, _ = cache.materialize_sources(solution, scratch)
        (source / ".triton" / "abc").mkdir(parents=True)
        (source / ".triton" / "abc" / "k.cubin").write_text(kernel)
        (source / "main.py").write_text("def run():\n    return 666\n")
        assert promote_entry(solution, scratch, cache_root) is (run == 1)
    assert (entry / ".triton" / "abc" / "k.cubin").read_text() == "first"
    assert (entry / "main.py").read_text() == solution.sources[0].content


def test_promotion_touches_no_other_entry_and_needs_no_scratch_entry(tmp_path: Path) -> None:
    solution, other = make_solution(), make_solution("return 2")
    scratch, cache_root = tmp_path / "scratch", tmp_path / "cache"
    assert promote_entry(solution, scratch, cache_root) is False  # no scratch root at all
    cache.materialize_sources(other, cache_root)
    planted, _ = cache.materialize_sources(other, scratch)  # another key's entry, written by this worker
    (planted / ".triton").mkdir()
    before = snapshot(cache_root)
    assert promote_entry(solution, scratch, cache_root) is False
    assert snapshot(cache_root) == before and (planted / ".triton").is_dir()

    elsewhere = tmp_path / "elsewhere"
    cache.materialize_sources(solution, elsewhere)
    (scratch / "python").rename(tmp_path / "moved")
    (scratch / "python").symlink_to(elsewhere / "python")  # the way there goes through a symlink
    assert promote_entry(solution, scratch, cache_root) is False
    assert snapshot(cache_root) == before and solution_dir(solution, elsewhere).is_dir()

    (scratch / "python").unlink()
    (tmp_path / "moved").rename(scratch / "python")
    source, _ = cache.materialize_sources(solution, scratch)
    (source / ".triton").mkdir()
    solution_dir(solution, cache_root).symlink_to(solution_dir(solution, elsewhere))  # a planted cache entry
    assert promote_entry(solution, scratch, cache_root) is False  # nothing is written through it
    assert sorted(p.name for p in solution_dir(solution, elsewhere).iterdir()) == ["main.py"]


# --- triton ----------------------------------------------------------------------------------------------

TRITON_SCRIPT = """
import json, os, sys
import torch
import triton
from flashinfer_bench.compile import build_solution
from flashinfer_bench.data import Solution

cache_root, scratch = sys.argv[1], sys.argv[2]
report = []
for path in sys.argv[3:]:
    solution = Solution.model_validate_json(open(path).read())
    runnable = build_solution(solution, device="cpu", cache_dir=cache_root, scratch_dir=scratch)
    x = torch.arange(8, dtype=torch.float32)
    out = torch.zeros(8)
    runnable.fn(x, out)
    report.append({"out": out.tolist(), "source_dir": str(runnable.source_dir), "cached": runnable.cached,
                   "env": os.environ["TRITON_CACHE_DIR"], "knobs": str(triton.knobs.cache.dir)})
print(json.dumps(report))
"""

TRITON_KERNEL = """
import triton
import triton.language as tl


@triton.jit
def _double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * FACTOR, mask=mask)


def run(x, out):
    _double[(triton.cdiv(x.numel(), 4),)](x, out, x.numel(), BLOCK=4)
"""


def test_triton_on_the_cpu_with_a_scratch_dir_gets_a_kernel_cache_of_its_own(
    tmp_path: Path, read_only_cache: Path, sealer: Sealer
) -> None:
    pytest.importorskip("triton")

    def triton_solution(factor: int) -> Solution:
        return Solution.model_validate({
            "name": f"double{factor}", "definition": "d", "author": "tests",
            "spec": {"language": "triton", "target_hardware": ["cpu"], "entry_point": "main.py::run"},
            "sources": [{"path": "main.py", "content": f"FACTOR = {factor}\n" + TRITON_KERNEL}],
        })

    cached, fresh = triton_solution(2), triton_solution(3)
    entry, _ = cache.materialize_sources(cached, read_only_cache)
    (entry / ".triton" / "abc").mkdir(parents=True)
    (entry / ".triton" / "abc" / "k.json").write_text("{}")  # kernels an earlier run compiled
    sealer.seal(read_only_cache)
    before = snapshot(read_only_cache)
    paths = []
    for solution in (cached, fresh):
        paths.append(tmp_path / f"{solution.name}.json")
        paths[-1].write_text(solution.model_dump_json())
    (tmp_path / "script.py").write_text(textwrap.dedent(TRITON_SCRIPT))
    scratch = tmp_path / "scratch"
    env = {**child_env(), "TRITON_INTERPRET": "1"}
    result = subprocess.run([sys.executable, str(tmp_path / "script.py"), str(read_only_cache), str(scratch),
                             *map(str, paths)], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    first, second = json.loads(result.stdout.splitlines()[-1])
    x = list(range(8))
    assert first["out"] == [2.0 * v for v in x] and second["out"] == [3.0 * v for v in x]
    assert (first["source_dir"], first["cached"]) == (str(entry), True)
    assert (second["source_dir"], second["cached"]) == (str(solution_dir(fresh, scratch)), False)
    for report, solution in ((first, cached), (second, fresh)):
        own = str(solution_dir(solution, scratch) / ".triton")
        assert report["env"] == report["knobs"] == own
    assert (solution_dir(cached, scratch) / ".triton" / "abc" / "k.json").read_text() == "{}"  # seeded
    assert snapshot(read_only_cache) == before


def test_a_staged_entry_is_a_copy_and_never_written_through_a_link(tmp_path: Path) -> None:
    solution, cache_root = make_solution(), tmp_path / "cache"
    entry, _ = cache.materialize_sources(solution, cache_root)
    scratch = tmp_path / "scratch"
    assert cache.stage_entry(solution, cache_root, scratch) is True
    staged = solution_dir(solution, scratch)
    assert (staged / "main.py").read_text() == (entry / "main.py").read_text()
    assert (staged / "main.py").stat().st_ino != (entry / "main.py").stat().st_ino  # a copy: writing it
    (staged / "main.py").write_text("def run():\n    return 666\n")  # leaves the cache as it was
    assert (entry / "main.py").read_text() == solution.sources[0].content
    assert cache.stage_entry(solution, cache_root, scratch) is False  # there already: nothing copied

    elsewhere, planted = tmp_path / "elsewhere", tmp_path / "planted"
    elsewhere.mkdir()
    planted.mkdir()
    (planted / "python").symlink_to(elsewhere)  # a language folder that leads out of the scratch root
    assert cache.stage_entry(solution, cache_root, planted) is False
    assert list(elsewhere.iterdir()) == []
    assert cache.stage_entry(make_solution("return 'absent'"), cache_root, tmp_path / "other") is False
