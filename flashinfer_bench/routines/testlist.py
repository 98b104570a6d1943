"""Read a testlist: one case per line, ``#`` comments and blank lines allowed."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from .errors import UsageError


@dataclass(frozen=True)
class TestlistLine:
    lineno: int
    argv: list[str]


def read_testlist(path: str) -> list[TestlistLine]:
    """Split each non-empty, non-comment line like a shell would; a trailing ``# ...`` is a comment too."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as exc:
        raise UsageError(f"cannot read testlist {path}: {exc.strerror}") from exc
    cases = []
    for lineno, line in enumerate(lines, start=1):
        try:
            argv = shlex.split(line, comments=True)
        except ValueError as exc:
            raise UsageError(f"{path}:{lineno}: {exc}") from exc
        if argv:
            cases.append(TestlistLine(lineno, argv))
    return cases
