"""The content-addressed build cache: one folder per distinct solution content.

``<cache_root>/<language>/<content_hash[:20]>/`` holds the solution's sources at their relative
paths; builders put their artifacts in a sub-folder of it. The folder appears atomically (written
under a temporary name, then renamed), so a process that sees it sees every source file.

Nothing in it is trusted on reuse: sources are compared with the solution's before use, and a built
library with the SHA-256 recorded when it was built. An entry that changed is set aside and rebuilt.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from flashinfer_bench.data import Solution

CACHE_ENV_VAR = "FLASHINFER_BENCH_CACHE_DIR"
HASH_LENGTH = 20


def resolve_cache_root(cache_dir: str | os.PathLike[str] | None) -> Path:
    """``cache_dir`` if given, else ``$FLASHINFER_BENCH_CACHE_DIR``, else ``~/.cache/flashinfer_bench``."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser().resolve()
    from_env = os.environ.get(CACHE_ENV_VAR)
    if from_env:
        return Path(from_env).expanduser().resolve()
    return Path.home() / ".cache" / "flashinfer_bench"


def solution_key(solution: Solution) -> str:
    return solution.content_hash()[:HASH_LENGTH]


def solution_dir(solution: Solution, cache_root: Path) -> Path:
    return cache_root / solution.spec.language.value / solution_key(solution)


def materialize_sources(solution: Solution, cache_root: Path) -> tuple[Path, bool]:
    """Write the solution's sources into its cache folder unless they are there already.

    Returns the folder and whether it already existed. Concurrent callers may both write; the first
    rename wins and the others discard their copy, which has the same content.
    """
    target = solution_dir(solution, cache_root)
    if target.is_dir():
        if sources_match(solution, target):
            return target, True
        # Changed since it was written (a solution with write access to the cache, a disk error): set it
        # aside, never reuse it, and write the sources afresh.
        quarantine = Path(tempfile.mkdtemp(prefix=f".{target.name}.changed.", dir=target.parent))
        os.rename(target, quarantine / target.name)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        staging.chmod(0o755)  # mkdtemp makes it private to its creator
        for source in solution.sources:
            path = staging / source.path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(source.content, encoding="utf-8")
        os.rename(staging, target)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if target.is_dir():
            return target, True
        raise
    return target, False


def sources_match(solution: Solution, directory: Path) -> bool:
    """Whether every source file in ``directory`` still holds exactly the solution's content."""
    for source in solution.sources:
        try:
            if (directory / source.path).read_text(encoding="utf-8") != source.content:
                return False
        except (OSError, UnicodeDecodeError):
            return False
    return True


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


@contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` across processes; the OS drops it if the holder dies."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def read_artifact(build_dir: Path, name: str) -> Path | None:
    """The built library recorded for ``name``, if a build finished and the file is still the one it wrote
    (its SHA-256 is in the marker); a changed or missing library means building again."""
    marker = build_dir / f"{name}.artifact"
    try:
        relative, _, digest = marker.read_text(encoding="utf-8").strip().partition(" ")
        artifact = build_dir / relative
        return artifact if digest and file_digest(artifact) == digest else None
    except OSError:
        return None


def record_artifact(build_dir: Path, name: str, artifact: Path) -> None:
    """Mark a build finished, with the library's SHA-256; written last and renamed into place, so a reader
    never sees half a build."""
    staging = build_dir / f".{name}.artifact.tmp"
    staging.write_text(f"{artifact.relative_to(build_dir)} {file_digest(artifact)}", encoding="utf-8")
    os.replace(staging, build_dir / f"{name}.artifact")
