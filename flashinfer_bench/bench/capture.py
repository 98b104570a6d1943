"""Capturing everything a solution prints, at the file-descriptor level, into a file the parent can read.

The parent names the file, so even when the worker dies mid-item its last output can be read back.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: A trace's log keeps at most this many bytes of captured output: the start and the (more telling) end.
LOG_HEAD_BYTES = 4 * 1024
LOG_TAIL_BYTES = 28 * 1024


@contextmanager
def capture_fds(target: str | Path | int | None) -> Iterator[None]:
    """Send fds 1 and 2 (and Python's sys.stdout/sys.stderr) to ``target`` for the duration: a path (opened for
    appending), or an open fd (a worker's log, opened for it by its judge); None leaves them alone."""
    if target is None:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    fd = target if isinstance(target, int) else os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for own in (*saved, *([] if fd is target else [fd])):
            os.close(own)


def take_captured(path: str | Path) -> str:
    """An item's captured output, read back bounded; the file is removed (the next item's capture starts empty)."""
    captured = read_bounded(path)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    return captured


def read_bounded(path: str | Path) -> str:
    """The captured text, cut to its head and tail when it is long."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as handle:
            if size <= LOG_HEAD_BYTES + LOG_TAIL_BYTES:
                data = handle.read()
            else:
                head = handle.read(LOG_HEAD_BYTES)
                handle.seek(size - LOG_TAIL_BYTES)
                tail = handle.read()
                omitted = size - LOG_HEAD_BYTES - LOG_TAIL_BYTES
                data = head + f"\n[... {omitted} bytes of output omitted ...]\n".encode() + tail
    except FileNotFoundError:
        return ""
    return data.decode("utf-8", errors="replace")
