"""The server's settings: where it listens, who may call it, how much each caller may ask, and the reward."""

from __future__ import annotations

import hashlib
import ipaddress
import math
from dataclasses import dataclass, field
from pathlib import Path

from flashinfer_bench.data.errors import TraceSetError

#: The owner of every task when authentication is off (a loopback bind only).
ANONYMOUS = "anonymous"


@dataclass(frozen=True)
class Limits:
    """Per-token and server-wide bounds. A per-token bound answers 429, a server-wide one 503."""

    #: Evaluations a token may have pending or running at once.
    queued_per_token: int = 2000
    #: Evaluations pending or running on the whole server.
    queued_total: int = 20000
    #: Submissions (requests to /evaluate, /evaluate/batch, /verify) per token per minute; a burst of as many.
    submissions_per_minute: float = 600.0
    #: Tasks in one /evaluate/batch request.
    batch_tasks: int = 500
    #: Longest a long poll (``?timeout=``) or a /verify waits, in seconds.
    max_wait_s: float = 3600.0


@dataclass(frozen=True)
class RewardConfig:
    """``reward`` of /verify: the mean, over the workloads evaluated, of
    ``passed + speedup_weight * log2(clamp(speedup, 1, speedup_cap))`` for a PASSED evaluation,
    ``incorrect`` for an INCORRECT_* one, and ``error`` for COMPILE_ERROR, RUNTIME_ERROR and TIMEOUT."""

    passed: float = 1.0
    speedup_weight: float = 1.0
    speedup_cap: float = 16.0
    incorrect: float = 0.0
    error: float = 0.0

    def __post_init__(self) -> None:
        for name in ("passed", "speedup_weight", "speedup_cap", "incorrect", "error"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"reward {name} must be a finite number, got {getattr(self, name)}")
        if self.speedup_cap < 1:
            raise ValueError(f"reward speedup_cap must be 1 or more, got {self.speedup_cap}")


@dataclass(frozen=True)
class Settings:
    #: sha256 of each accepted token -> the owner id it maps to; None: authentication is off.
    tokens: dict[str, str] | None = field(default_factory=dict)
    limits: Limits = Limits()
    reward: RewardConfig = RewardConfig()
    #: Evaluations handed to the runner at once (grouped over its devices as `run` groups them).
    batch_size: int = 64


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def owner_of(digest: str) -> str:
    """The id a token's tasks are stored under: a prefix of its digest, never the token itself."""
    return digest[:16]


def token_lines(text: str) -> list[tuple[int, str]]:
    """(line number, token) of a token file's text: one token per line, blank lines and ``#`` comments skipped."""
    lines = ((number, line.strip()) for number, line in enumerate(text.splitlines(), 1))
    return [(number, token) for number, token in lines if token and not token.startswith("#")]


def read_tokens(path: str | Path) -> dict[str, str]:
    """The tokens of a token file (``token_lines``): digest -> owner."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise TraceSetError(path, None, f"cannot be read: {exc.strerror}") from None
    tokens = {}
    for number, token in token_lines(text):
        if any(c.isspace() for c in token) or len(token) < 16:
            raise TraceSetError(f"{path}:{number}", None,
                                "expected one token per line: at least 16 characters, no spaces")
        digest = token_digest(token)
        tokens[digest] = owner_of(digest)
    if not tokens:
        raise TraceSetError(path, None, "expected at least one token (one per line)")
    return tokens


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
