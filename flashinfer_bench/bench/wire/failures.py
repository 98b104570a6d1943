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


#: What torch's caching allocator raises in a sandboxed worker when the device runs out of memory: its report of
#: the device's memory by process starts NVML, which the sandbox does not reach, and that assertion fails first.
NVML_IN_OOM_REPORT = "nvmlInit_v2_() INTERNAL ASSERT FAILED"


def device_memory_note(exc: BaseException) -> str | None:
    """What the log should say beside an exception that hides the device running out of memory, if it does."""
    if isinstance(exc, RuntimeError) and NVML_IN_OOM_REPORT in str(exc) and "CUDACachingAllocator" in str(exc):
        return ("the device ran out of memory (torch's report of it reads NVML, which the sandbox does not reach: "
                "hence the assertion above)")
    return None
