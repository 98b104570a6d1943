"""The content-addressed build cache: one folder per distinct solution content.

``<cache_root>/<language>/<content_hash[:20]>/`` holds the solution's sources at their relative
paths; builders put their artifacts in a sub-folder of it. The folder appears atomically (written
under a temporary name, then renamed), so a process that sees it sees every source file.

Nothing in it is trusted on reuse: sources are compared with the solution's before use, and a built
library with the SHA-256 recorded when it was built. An entry that changed is set aside and rebuilt.

A sandboxed worker does not see the cache root: a trusted process copies the entry of the worker's one solution
into the worker's scratch root first (:func:`stage_entry`), the worker reads and builds there, in the same
layout, and the trusted process moves what it added into the cache once the worker has exited
(:func:`promote_entry`).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import shutil
import stat
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


# --- staging and promotion: run by a trusted process, never by solution code ---------------------------------


def stage_entry(solution: Solution, cache_root: Path, scratch_root: Path) -> bool:
    """Copy ``solution``'s cache entry into ``scratch_root`` (the same layout) for a worker that has not run
    any solution code yet; returns whether anything was copied.

    A copy, never hard links: the worker may write its scratch root, and through a link it would write the
    cache. Symlinks are copied as symlinks. Nothing is copied where the scratch entry exists, where the cache
    entry is missing, or where a folder on either side is a symlink."""
    source = solution_dir(solution, cache_root)
    target = solution_dir(solution, scratch_root)
    if not _real_folders(source.parent, source) or os.path.lexists(target):
        return False
    for folder in (scratch_root, target.parent):  # made one by one: never through a symlink
        if os.path.lexists(folder) and not _real_folders(folder):
            return False
        folder.mkdir(exist_ok=True)
    return _copy_into_place(source, target)


#: Mode bits a promoted file or folder loses: set-id bits (a file a worker running as root wrote would be a
#: setuid-root program in the cache) and write access for anyone but the owner.
STRIPPED_MODE_BITS = stat.S_ISUID | stat.S_ISGID | stat.S_IWGRP | stat.S_IWOTH


def promote_entry(solution: Solution, scratch_root: Path, cache_root: Path) -> bool:
    """Move the entry a worker wrote for ``solution`` under ``scratch_root`` into ``cache_root``; returns
    whether anything was added.

    Without an entry in the cache, the whole scratch entry is moved there (renamed, or across file systems
    copied under a temporary name and renamed). With one, only the top-level children it lacks are moved in
    (a ``.triton`` folder, a build folder made after the entry was promoted); nothing in the cache is
    replaced. A missing scratch entry, a symlink on the way to it, or a cache entry (or its language folder)
    that is a symlink, adds nothing.

    Why this is safe although the worker that wrote the scratch entry ran untrusted code: the caller must
    call it only after that worker has exited, and only for a scratch root written by a worker that ran this
    one solution (an isolated worker; never a persistent worker's, where one solution could have written
    another's scratch entry before it was built). The entry is keyed by the solution's content hash, so
    whatever the solution wrote can only ever reach later runs of its own code, which could do the same
    themselves; every reuse still verifies the sources and a built library's SHA-256 as for any entry. No
    file is read or interpreted and no symlink followed: symlinks move as symlinks, FIFOs, sockets and
    device nodes are dropped, and set-id bits and group/other write access are cleared
    (``STRIPPED_MODE_BITS``).
    """
    source = solution_dir(solution, scratch_root)
    target = solution_dir(solution, cache_root)
    if not _real_folders(source.parent, source):
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    if not _real_folders(target.parent):
        return False
    _sanitize(source)
    if _place(source, target):
        return True
    if not _real_folders(target):
        return False
    added = [_place(child, target / child.name) for child in sorted(source.iterdir())]
    return any(added)


def _real_folders(*paths: Path) -> bool:
    """Whether every path is a folder, not a symlink (to one): a promotion never writes through a symlink."""
    return all(path.is_dir() and not path.is_symlink() for path in paths)


def _sanitize(tree: Path) -> None:
    """Drop what is neither a folder, a regular file nor a symlink, and clear ``STRIPPED_MODE_BITS``; folders
    are made listable by their owner first, so none of what they hold is missed."""
    _sanitize_node(str(tree))
    for parent, folders, files in os.walk(tree, onerror=_raise):  # top-down, never into a symlink
        for name in (*folders, *files):
            _sanitize_node(os.path.join(parent, name))


def _sanitize_node(path: str) -> None:
    mode = os.lstat(path).st_mode
    if stat.S_ISDIR(mode):
        os.chmod(path, (stat.S_IMODE(mode) | stat.S_IRWXU) & ~STRIPPED_MODE_BITS)
    elif stat.S_ISREG(mode):
        os.chmod(path, stat.S_IMODE(mode) & ~STRIPPED_MODE_BITS)
    elif not stat.S_ISLNK(mode):
        os.unlink(path)


def _raise(error: OSError) -> None:
    raise error


def _place(node: Path, target: Path) -> bool:
    """Move ``node`` to ``target`` unless something is there; whether it was moved."""
    if os.path.lexists(target):
        return False
    try:
        os.rename(node, target)
    except OSError as error:
        if error.errno == errno.EXDEV:
            return _copy_into_place(node, target)
        if os.path.lexists(target):  # another promotion of the same entry was first
            return False
        raise
    return True


def _copy_into_place(node: Path, target: Path) -> bool:
    """Copy ``node`` (symlinks as symlinks) under a temporary name beside ``target``, then rename it there."""
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.promote.", dir=target.parent))
    try:
        copy = staging / target.name
        if node.is_symlink():
            os.symlink(os.readlink(node), copy)
        elif node.is_dir():
            shutil.copytree(node, copy, symlinks=True)
        else:
            shutil.copy2(node, copy, follow_symlinks=False)
        return _place(copy, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
