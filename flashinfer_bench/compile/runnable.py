"""What a build produces: the callable and how to call it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Runnable:
    """A built solution.

    With ``destination_passing_style`` the outputs are pre-allocated and passed after the inputs and
    ``fn`` returns nothing; without it ``fn`` returns the outputs like the definition's reference.
    """

    fn: Callable[..., Any]
    destination_passing_style: bool
    cached: bool
    """True when nothing had to be built: the artifact was already in the build cache."""
    build_log: str = ""
    source_dir: Path | None = None
    """The cache folder holding the solution's sources (and any build artifacts)."""
    setup: Callable[..., Any] | None = None
    """The entry file's top-level ``setup`` (Python and Triton solutions): given the inputs that describe the
    problem's layout, by name, it returns keyword arguments for ``fn``, and runs before every call, untimed
    (docs/solutions.md)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)
