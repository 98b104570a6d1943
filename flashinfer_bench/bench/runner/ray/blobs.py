"""Blob inputs (safetensors files under the trace set) travel through Ray's object store, so that nodes need no
shared file system: the driver puts each file once while a dispatched group needs it, and a device host writes
the files its groups use into a trace-set root of its own.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from flashinfer_bench.bench.wire.parent_judge import WorkItem
from flashinfer_bench.data.workload import SafetensorsInput


def relative_blob_path(path: str) -> PurePosixPath:
    """A blob's path inside a trace set, or ValueError (as data.workload_check.blob_path, which the driver
    already applied to every runnable workload)."""
    pure = PurePosixPath(path.replace("\\", "/"))
    if pure.is_absolute() or ".." in pure.parts:
        raise ValueError(f"blob path {path!r} must be relative to the trace set and stay inside it")
    return pure


def blob_files(items: Iterable[WorkItem]) -> dict[str, Path]:
    """{path inside the trace set: the file on the driver's machine} of every blob the items read."""
    files: dict[str, Path] = {}
    for item in items:
        for source in item.workload.inputs.values():
            if isinstance(source, SafetensorsInput):
                relative = relative_blob_path(source.path)
                files[str(relative)] = Path(item.trace_set_root or ".") / relative
    return files


class BlobShipper:
    """The driver's side: ``acquire`` puts what a group needs (files already put are shared), ``release`` drops the
    driver's reference once no dispatched group needs a file (Ray frees it when its host is done with it too)."""

    def __init__(self) -> None:
        self._refs: dict[str, Any] = {}
        self._users: Counter[str] = Counter()
        self._lock = threading.Lock()

    def acquire(self, items: Iterable[WorkItem]) -> dict[str, Any]:
        import ray

        refs = {}
        with self._lock:
            for relative, path in blob_files(items).items():
                if relative not in self._refs:
                    self._refs[relative] = ray.put(path.read_bytes())
                self._users[relative] += 1
                refs[relative] = self._refs[relative]
        return refs

    def release(self, refs: Mapping[str, Any]) -> None:
        with self._lock:
            for relative in refs:
                self._users[relative] -= 1
                if self._users[relative] <= 0:
                    del self._users[relative], self._refs[relative]


def materialise(root: Path, refs: Mapping[str, Any]) -> None:
    """The host's side: make ``root`` hold the blobs in ``refs`` and no others (a host keeps one group's blobs,
    not every blob it ever used). A file not there yet is fetched from the object store, written whole, then
    renamed, so that a file present is complete."""
    import ray

    targets = {root / relative_blob_path(relative): ref for relative, ref in refs.items()}
    for stale in [path for path in root.rglob("*") if path.is_file() and path not in targets]:
        stale.unlink()
    for target, ref in targets.items():
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
        partial.write_bytes(ray.get(ref))
        os.replace(partial, target)
