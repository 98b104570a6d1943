"""The error every malformed or inconsistent trace-set file is reported with."""

from __future__ import annotations

from pathlib import Path


class TraceSetError(ValueError):
    """A trace-set file that cannot be used: names the file, the field and what was expected.

    ``str(error)`` is a single line, so a command-line tool can print it as is.
    """

    def __init__(self, path: str | Path | None, field: str | None, expected: str):
        self.path = str(path) if path is not None else None
        self.field = field
        self.expected = expected
        where = self.path or "<memory>"
        if field:
            where += f": field '{field}'"
        super().__init__(f"{where}: {expected}")


def describe_validation_error(exc: Exception) -> tuple[str | None, str]:
    """Turn a pydantic ValidationError into (dotted field path, one-line message) for its first error."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return None, " ".join(str(exc).split())
    first = errors()[0]
    field = ".".join(str(p) for p in first.get("loc", ())) or None
    message = first.get("msg", "invalid value")
    if first.get("type") == "missing":
        message = "required field is missing"
    elif first.get("type") == "extra_forbidden":
        message = "unknown field"
    return field, " ".join(message.split())
