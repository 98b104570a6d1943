"""The channel between a judge and the worker that runs solution code: JSON messages, nothing else, both
directions defined here.

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
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from flashinfer_bench.bench.waiting import poll_until
from flashinfer_bench.bench.wire.failures import CallFailed
from flashinfer_bench.data import EvaluationStatus

#: Bytes of one message from a worker; a longer one is a protocol violation.
MAX_MESSAGE_BYTES = 1 << 20
#: A failure's message is kept to this many characters (the worker's traceback, as text).
MAX_FAILURE_CHARS = 64 * 1024


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


# --- judge -> worker: trusted by the worker, parsed all the same (a typo in the judge is a clear error) -------


class Stop(_Message):
    op: Literal["stop"] = "stop"


class NewSlot(_Message):
    """Followed by the buffer's file descriptor (SCM_RIGHTS): the outputs' bytes go there."""

    op: Literal["slot"] = "slot"
    size: int = Field(gt=0)


class Load(_Message):
    """Build the solution (or, for ``calibration``, take the zero-filling callee instead); followed by the log
    file's descriptor. Definitions, workloads and solutions travel as their JSON."""

    op: Literal["load"] = "load"
    calibration: bool
    definition: str
    solution: str
    workload: str
    trace_set_root: str | None


class Call(_Message):
    op: Literal["call"] = "call"
    seed: int
    repeat: int = Field(ge=1)
    rng_seed: int | None
    return_inputs: list[str]


class Time(_Message):
    """A timing loop, in rounds (judge/schedule.py): the first round's seeds, one per call; each later round's
    come in a ``Next``, the answer to the worker's ``More``, or with a ``Ship`` that picks no call."""

    op: Literal["time"] = "time"
    iterations: int = Field(ge=1)
    warmup: int = Field(ge=0)
    seeds: list[int] = Field(min_length=1)
    #: Replay the timed calls where the worker can (bench/replay.py ReplayShape: ``replay_rounds`` rounds, the
    #: first of ``replay_first_calls`` calls, none of more than ``replay_most_calls``); ``replay_rounds`` 0: no.
    replay_first_calls: int = Field(0, ge=0)
    replay_most_calls: int = Field(0, ge=0)
    replay_rounds: int = Field(0, ge=0)


class _Seeds(_Message):
    """A round's seeds: ``seeds``, then ``zeros`` seeds of 0. A replayed round's calls draw their inputs from its
    first seed (bench/replay.py), so it holds that seed and a 0 for each of its other calls, sent as a count: a
    list of 1,024 seeds took the judge and the worker about 0.1 ms to write and read, inside the round's window."""

    seeds: list[int] = Field(default_factory=list)
    zeros: int = Field(default=0, ge=0, le=1 << 20)

    @staticmethod
    def packed(seeds: list[int]) -> dict[str, Any]:
        """The fields that send ``seeds``."""
        kept = len(seeds)
        while kept > 1 and seeds[kept - 1] == 0:
            kept -= 1
        return {"seeds": seeds[:kept], "zeros": len(seeds) - kept}

    def round_seeds(self) -> list[int]:
        return [*self.seeds, *[0] * self.zeros]


class Ship(_Seeds):
    """The answer to ``Ran``: put the kept outputs of these calls of the round just ended in the buffer, one after
    the other (and answer ``Shipped``); none: go on, with the next round's seeds where the worker said it
    makes more calls (it asks no ``More`` for them)."""

    op: Literal["ship"] = "ship"
    indices: list[int]


class Next(_Seeds):
    """The answer to ``More``: the next round's seeds."""

    op: Literal["next"] = "next"
    seeds: list[int] = Field(min_length=1)


ToWorker = Annotated[Stop | NewSlot | Load | Call | Time | Ship | Next, Field(discriminator="op")]
_TO_WORKER: TypeAdapter[Any] = TypeAdapter(ToWorker)


# --- worker -> judge: untrusted, strictly checked -------------------------------------------------------------


class Ready(_Message):
    op: Literal["ready"] = "ready"
    isolation: str = Field(max_length=4096)


class Built(_Message):
    op: Literal["built"] = "built"


class Failed(_Message):
    op: Literal["failed"] = "failed"
    status: Literal["INCORRECT_SHAPE", "INCORRECT_DTYPE", "INCORRECT_NUMERICAL", "RUNTIME_ERROR", "COMPILE_ERROR"]
    message: str
    healthy: bool


class Called(_Message):
    op: Literal["called"] = "called"
    wrote: list[Annotated[str, Field(max_length=256)]] = Field(max_length=1024)


class Sent(_Message):
    """The moment the worker sent an answer that closes one of the judge's windows (``Ran``, ``Shipped``): its
    clock then (``time.perf_counter``: CLOCK_MONOTONIC, which the judge's reads too) and its calling thread's waits
    for a CPU so far (schedstat ns; None where it cannot read them). The solution's word: the judge takes it only
    as a cap on what a busy host's waits take out of the window (judge/clock.py ``HostWatch.held_up``)."""

    at: float = Field(ge=0, allow_inf_nan=False)
    waited_ns: int | None = Field(default=None, ge=0, le=1 << 63)


class Ran(_Message):
    """Every call before ``count`` has ended (a round is over); ``more``: the worker makes more calls (its planned
    calls are not all made), so a ``Ship`` that picks none brings the next round's seeds; ``replay``: see below."""

    op: Literal["ran"] = "ran"
    count: int = Field(ge=1)
    more: bool = False
    #: The calls after these are replayed from a CUDA graph (bench/replay.py), as ``Time`` asked.
    replay: bool = False
    sent: Sent | None = None


class More(_Message):
    """The round's seeds are used up: the next round's, please."""

    op: Literal["more"] = "more"


class Shipped(_Message):
    op: Literal["shipped"] = "shipped"
    indices: list[Annotated[int, Field(ge=0)]] = Field(max_length=1 << 16)
    sent: Sent | None = None


class Timed(_Message):
    op: Literal["timed"] = "timed"
    samples_ms: list[float] = Field(max_length=1 << 16)
    method: str = Field(max_length=64)
    setup_ms: list[float] = Field(max_length=1 << 16)
    cache_policy: str = Field(max_length=64)
    cuda_graph: bool


FromWorker = Annotated[Ready | Built | Failed | Called | Ran | More | Shipped | Timed, Field(discriminator="op")]
_FROM_WORKER: TypeAdapter[Any] = TypeAdapter(FromWorker)


_M = TypeVar("_M", bound=_Message)

#: How a WorkerGone for a closed channel begins: the parent replaces it with the worker's exit status.
CHANNEL_CLOSED = "the worker closed its channel"


class WorkerGone(Exception):
    """The worker died, closed its channel or broke the protocol: its item is a RUNTIME_ERROR."""


def encode(message: _Message) -> bytes:
    return json.dumps(message.model_dump(), allow_nan=False, separators=(",", ":")).encode()


class WorkerChannel:
    """The judge's end of the channel to one worker."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        #: The worker said its device context may be broken after a failure: retire it.
        self.unhealthy = False

    def send(self, message: _Message) -> None:
        try:
            self.conn.send_bytes(encode(message))
        except (OSError, ValueError):
            raise WorkerGone(CHANNEL_CLOSED) from None

    def send_fd(self, fd: int) -> None:
        try:
            send_handle(self.conn, fd, 0)
        except OSError:
            raise WorkerGone(CHANNEL_CLOSED) from None

    def receive(self, *expected: type[_M]) -> _M:
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
        if not isinstance(message, expected):
            due = [kind.model_fields["op"].default for kind in expected]
            raise WorkerGone(f"the worker broke the protocol: sent '{message.op}' where {due} was due")
        if isinstance(message, Timed) and not all(math.isfinite(s) for s in (*message.samples_ms, *message.setup_ms)):
            raise WorkerGone("the worker broke the protocol: a timing sample is not finite")
        return message

    def close(self) -> None:
        self.conn.close()


class JudgeChannel:
    """The worker's end: it trusts what the judge sends, and sends only what the schemas above allow."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    def send(self, message: _Message) -> None:
        self.conn.send_bytes(encode(message))

    def receive(self, due: float | None = None) -> Stop | NewSlot | Load | Call | Time | Ship | Next:
        """The judge's next message; ``due``: when it is expected (``time.perf_counter``), to be awake for it
        (bench/waiting.py)."""
        if due is not None:
            poll_until(self.conn.poll, due)
        return _TO_WORKER.validate_json(self.conn.recv_bytes())

    def receive_fd(self) -> int:
        return recv_handle(self.conn)
