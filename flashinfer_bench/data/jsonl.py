"""JSON Lines as upstream reads and writes them: records separated by ``\\n`` alone, appended durably."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path


def jsonl_lines(data: bytes | Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, line) for each non-blank line of ``data``: the bytes, or a binary file.

    Only ``\\n`` ends a record (a binary file iterates on ``\\n`` alone): ``str.splitlines`` would also split
    on U+2028, U+0085 and others, which JSON strings may hold unescaped. Surrounding whitespace, a trailing
    ``\\r`` from a file edited on Windows included, is ignored by the JSON parser.
    """
    lines = data.split(b"\n") if isinstance(data, bytes) else data
    for index, line in enumerate(lines):
        if len(line) > 2 or line.strip():  # a record is longer than a line end; only short lines need a look
            yield index + 1, line


def append_jsonl_line(path: Path, line: str) -> None:
    """Append one line durably; a torn last line left by an earlier crash is closed off first, never rewritten."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab+") as handle:
        handle.seek(0, os.SEEK_END)
        prefix = b""
        if handle.tell() > 0:
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) != b"\n":
                prefix = b"\n"
        handle.write(prefix + line.encode("utf-8"))
        handle.flush()
        os.fsync(handle.fileno())
