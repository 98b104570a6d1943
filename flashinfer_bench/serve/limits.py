"""Who is calling (a bearer token), and whether they may submit now (a per-token rate, per-token and
server-wide queue bounds)."""

from __future__ import annotations

import threading
import time

from fastapi import HTTPException, Request

from flashinfer_bench.serve.settings import ANONYMOUS, Limits, token_digest
from flashinfer_bench.serve.store import Store


class Authenticator:
    def __init__(self, tokens: dict[str, str] | None):
        self.tokens = tokens

    def __call__(self, request: Request) -> str:
        """The caller's owner id; 401 without a known token."""
        if self.tokens is None:
            return ANONYMOUS
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        owner = self.tokens.get(token_digest(token.strip())) if scheme.lower() == "bearer" else None
        if owner is None:
            raise HTTPException(401, detail="a valid token is required: send 'Authorization: Bearer TOKEN'",
                                headers={"WWW-Authenticate": "Bearer"})
        return owner


class RateLimiter:
    """A token bucket per owner: ``per_minute`` submissions a minute, in bursts of as many."""

    def __init__(self, per_minute: float):
        self.capacity = per_minute
        self.rate = per_minute / 60.0
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, owner: str) -> float:
        """0 when a submission may go ahead (and is counted), else the seconds until one may."""
        now = time.monotonic()
        with self._lock:
            level, since = self._buckets.get(owner, (self.capacity, now))
            level = min(self.capacity, level + (now - since) * self.rate)
            if level < 1:
                self._buckets[owner] = (level, now)
                return (1 - level) / self.rate
            self._buckets[owner] = (level - 1, now)
            return 0.0


class Admission:
    """Whether ``evaluations`` more of ``owner`` may be queued now; raises the HTTP error saying why not."""

    def __init__(self, store: Store, limits: Limits):
        self.store = store
        self.limits = limits
        self.rate = RateLimiter(limits.submissions_per_minute)
        self.closed = False
        #: Held from the check to the insert, so that concurrent submissions cannot overshoot a bound.
        self.lock = threading.Lock()

    def check(self, owner: str, evaluations: int) -> None:
        if self.closed:
            raise HTTPException(503, detail="the server is shutting down", headers={"Retry-After": "30"})
        wait = self.rate.take(owner)
        if wait:
            raise HTTPException(429, detail=f"rate limit: {self.limits.submissions_per_minute:g} submissions a "
                                f"minute per token", headers={"Retry-After": str(max(1, round(wait)))})
        mine = self.store.queued(owner)
        if mine + evaluations > self.limits.queued_per_token:
            raise HTTPException(429, detail=f"quota: this token has {mine} evaluation(s) queued, at most "
                                f"{self.limits.queued_per_token} may be", headers={"Retry-After": "5"})
        total = self.store.queued()
        if total + evaluations > self.limits.queued_total:
            raise HTTPException(503, detail=f"the queue is full ({total} evaluations)", headers={"Retry-After": "30"})
