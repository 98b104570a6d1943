"""What a name read from a trace-set file may be, checked where the file is read.

Definition names, op types, solution names and authors become folder and file names of the trace set
(``data.layout``), and a solution's source paths become files of its build folder. A solution file is written by
whoever submitted the solution, so a name is checked before anything uses it: one path component, printable,
short enough for a file name. Every name of the public FlashInfer-Trace dataset and of upstream's traces passes
(they use letters, digits, ``_``, ``-`` and ``.``); the rule is wider than that on purpose, since upstream
accepts any string and names such as ``Qwen3.5-27B_...`` or an author's name in another script are legitimate.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

#: Linux file systems allow 255 bytes in a file name; the longest suffix a name is given is ``.jsonl``.
MAX_NAME_BYTES = 255 - len(".jsonl")

#: What a valid name is, in the words every rejection uses.
NAME_RULE = (f"a name is one path component: not empty, '.' or '..', at most {MAX_NAME_BYTES} bytes in UTF-8, "
             "without '/', '\\' or characters that do not print (control, format and line-break characters)")


def name_problem(value: str) -> str | None:
    """Why ``value`` is not a valid name, or None when it is one."""
    if value in ("", ".", ".."):
        return f"{value!r} is not a name"
    if "/" in value or "\\" in value:
        return f"{value!r} holds a path separator"
    # isprintable is False for control (NUL, escape, newline), format (bidirectional overrides, zero-width),
    # line and paragraph separators, and every space but ' ': characters that would let a name act on a
    # terminal or a file, or print as another name.
    if not value.isprintable():
        return f"{value!r} holds a character that does not print"
    if len(value.encode("utf-8")) > MAX_NAME_BYTES:
        return f"{value[:40]!r}... is longer than {MAX_NAME_BYTES} bytes"
    return None


def check_name(value: str) -> str:
    """``value`` unchanged if it is a valid name; ValueError saying what a name must be otherwise."""
    problem = name_problem(value)
    if problem is not None:
        raise ValueError(f"{problem}; {NAME_RULE}")
    return value


def check_relative_path(value: str) -> str:
    """``value`` unchanged if it is a normalised relative path whose every component is a valid name
    (``kernels/main.cu``); ValueError otherwise. Nothing is rewritten: ``./main.py`` and ``a//b`` are
    refused rather than normalised, so that the path a solution names is the file that is built."""
    if value.startswith("/"):
        raise ValueError(f"{value!r} is absolute")
    for part in value.split("/"):
        problem = name_problem(part)
        if problem is not None:
            raise ValueError(f"in {value!r}, {problem}; each component of a path is a name, and {NAME_RULE}")
    return value


#: A string field that holds a name (see ``check_name``).
Name = Annotated[str, AfterValidator(check_name)]
