"""The build failure type, and how the evaluator tells a compile error from a runtime error."""

from __future__ import annotations

import sys

LOG_LIMIT = 20_000
"""Most characters of compiler output kept in a BuildError's log."""


class BuildError(Exception):
    """A solution could not be built or imported; ``log`` holds the compiler output or traceback."""

    def __init__(self, message: str, log: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.log = log


def bound_log(text: str, limit: int = LOG_LIMIT) -> str:
    """Keep ``text`` within ``limit`` characters.

    Compilers print the first, real error early and cascades after it, while the last lines say
    where the build stopped, so both ends are kept and the middle is dropped.
    """
    if len(text) <= limit:
        return text
    head = limit // 5
    tail = limit - head
    omitted = len(text) - head - tail
    return f"{text[:head]}\n... [{omitted} characters omitted] ...\n{text[-tail:]}"


def is_compile_error(exc: BaseException) -> bool:
    """True when ``exc`` means the solution failed to compile rather than failed while running.

    That is a BuildError, or a Triton ``CompilationError`` (Triton compiles a kernel at its first
    launch), found on the exception or on the chain of exceptions it was raised from.
    """
    triton_errors = sys.modules.get("triton.compiler.errors")
    compilation_error = getattr(triton_errors, "CompilationError", None)
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, BuildError):
            return True
        if compilation_error is not None and isinstance(current, compilation_error):
            return True
        current = current.__cause__
    return False
