"""What a builder is told besides the solution: the target device and the cache root."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class BuildContext:
    device: str
    """"cpu", "cuda" or "cuda:<index>"."""
    cache_root: Path

    @property
    def on_cpu(self) -> bool:
        return self.device.split(":", 1)[0] == "cpu"
