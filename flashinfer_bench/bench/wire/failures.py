"""How a call that cannot be judged fails: raised in the worker's harness, sent over the wire as a ``failed``
message, and raised again in the judge from that message (the judge reads only its status and text)."""

from __future__ import annotations

import traceback

from flashinfer_bench.data import EvaluationStatus


class CallFailed(Exception):
    """A call could not be judged: outputs of the wrong structure, or an exception in solution code."""

    def __init__(self, status: EvaluationStatus, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def failure_of(exc: BaseException) -> CallFailed:
    """What an exception raised by solution code means for the verdict."""
    if isinstance(exc, CallFailed):
        return exc
    from flashinfer_bench.compile import is_compile_error

    status = EvaluationStatus.COMPILE_ERROR if is_compile_error(exc) else EvaluationStatus.RUNTIME_ERROR
    return CallFailed(status, "".join(traceback.format_exception(exc)))
