"""The run's secret and the seeds derived from it: plain integers, the same in every process (no torch here, so
that a driver can draw a run's secret before it imports anything heavy)."""

from __future__ import annotations

import hashlib
import secrets


def new_run_secret() -> int:
    """A fresh 128-bit secret for one run."""
    return secrets.randbits(128)


def stable_seed(*parts: object) -> int:
    """A 63-bit seed from ``parts``, the same in every process (Python's ``hash`` of a str is not)."""
    return _as_seed(hashlib.sha256("/".join(str(part) for part in parts).encode()).digest())


def _as_seed(digest: bytes) -> int:
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


class SeedStream:
    """``stable_seed(*prefix, *rest)`` for many ``rest``s (a session's calls), the prefix hashed once: the same
    seeds, for a copy of a hash state and a short update each."""

    def __init__(self, *prefix: object) -> None:
        self._prefix = hashlib.sha256(("/".join(str(part) for part in prefix) + "/").encode())

    def seed(self, *rest: object) -> int:
        """``stable_seed(*prefix, *rest)``; ``rest`` holds at least one part."""
        if not rest:
            raise ValueError("a seed of a stream needs at least one part beyond its prefix")
        digest = self._prefix.copy()
        digest.update("/".join(str(part) for part in rest).encode())
        return _as_seed(digest.digest())
