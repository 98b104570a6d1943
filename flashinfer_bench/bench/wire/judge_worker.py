"""The channel between a judge and the worker that runs solution code: JSON messages, nothing else.

What the worker sends is parsed against the schemas below (unknown fields, wrong types, oversized messages and
messages out of turn are all protocol violations); nothing is unpickled and no field is taken as a verdict.
The judge sends file descriptors the other way (the output buffer, the log file) with SCM_RIGHTS, never
receives any.
"""

from __future__ import annotations

import json
import math
from multiprocessing.connection import Connection
from multiprocessing.reduction import recv_handle, send_handle
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from flashinfer_bench.bench.wire.failures import CallFailed
from flashinfer_bench.data import EvaluationStatus

#: Bytes of one message from a worker; a longer one is a protocol violation.
MAX_MESSAGE_BYTES = 1 << 20
#: A failure's message is kept to this many characters (the worker's traceback, as text).
MAX_FAILURE_CHARS = 64 * 1024


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Ready(_Message):
    op: Literal["ready"]
    isolation: str = Field(max_length=4096)


class Built(_Message):
    op: Literal["built"]


class Failed(_Message):
    op: Literal["failed"]
    status: Literal["INCORRECT_SHAPE", "INCORRECT_DTYPE", "INCORRECT_NUMERICAL", "RUNTIME_ERROR", "COMPILE_ERROR"]
    message: str
    healthy: bool


class Called(_Message):
    op: Literal["called"]
    wrote: list[Annotated[str, Field(max_length=256)]] = Field(max_length=1024)


class Done(_Message):
    op: Literal["done"]
    index: int = Field(ge=0)


class Shipped(_Message):
    op: Literal["shipped"]
    index: int = Field(ge=0)


class Timed(_Message):
    op: Literal["timed"]
    samples_ms: list[float] = Field(max_length=1 << 16)
    method: str = Field(max_length=64)
    setup_ms: list[float] = Field(max_length=1 << 16)


FromWorker = Annotated[Ready | Built | Failed | Called | Done | Shipped | Timed, Field(discriminator="op")]
_FROM_WORKER: TypeAdapter[Any] = TypeAdapter(FromWorker)


#: How a WorkerGone for a closed channel begins: the parent replaces it with the worker's exit status.
CHANNEL_CLOSED = "the worker closed its channel"


class WorkerGone(Exception):
    """The worker died, closed its channel or broke the protocol: its item is a RUNTIME_ERROR."""


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, allow_nan=False, separators=(",", ":")).encode()


class WorkerChannel:
    """The judge's end of the channel to one worker."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        #: The worker said its device context may be broken after a failure: retire it.
        self.unhealthy = False

    def send(self, **message: Any) -> None:
        try:
            self.conn.send_bytes(encode(message))
        except (OSError, ValueError):
            raise WorkerGone(CHANNEL_CLOSED) from None

    def send_fd(self, fd: int) -> None:
        try:
            send_handle(self.conn, fd, 0)
        except OSError:
            raise WorkerGone(CHANNEL_CLOSED) from None

    def receive(self, *expected: str) -> Any:
        """The next message, which must be one of ``expected`` (a ``failed`` one raises CallFailed)."""
        try:
            raw = self.conn.recv_bytes(MAX_MESSAGE_BYTES)
        except (EOFError, OSError) as exc:
            if isinstance(exc, EOFError):
                raise WorkerGone(CHANNEL_CLOSED) from None
            raise WorkerGone(f"the worker broke the protocol: {exc}") from None
        try:
            message = _FROM_WORKER.validate_json(raw)
        except ValidationError as exc:
            raise WorkerGone(f"the worker broke the protocol: {exc.errors()[0]['msg']}") from None
        if isinstance(message, Failed):
            self.unhealthy = self.unhealthy or not message.healthy
            raise CallFailed(EvaluationStatus(message.status), message.message[:MAX_FAILURE_CHARS])
        if message.op not in expected:
            raise WorkerGone(f"the worker broke the protocol: sent '{message.op}' where {list(expected)} was due")
        if isinstance(message, Timed) and not all(math.isfinite(s) for s in (*message.samples_ms, *message.setup_ms)):
            raise WorkerGone("the worker broke the protocol: a timing sample is not finite")
        return message

    def close(self) -> None:
        self.conn.close()


class JudgeChannel:
    """The worker's end: it trusts what the judge sends, and sends only what the schemas above allow."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def send(self, **message: Any) -> None:
        self.conn.send_bytes(encode(message))

    def receive(self) -> dict[str, Any]:
        return json.loads(self.conn.recv_bytes())

    def receive_fd(self) -> int:
        return recv_handle(self.conn)
