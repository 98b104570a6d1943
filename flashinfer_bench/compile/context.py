"""What a builder is told besides the solution: the target device, the cache root and, for a process that may
not write the cache root (a sandboxed worker), a private scratch root it writes instead."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from flashinfer_bench.compile.cache import materialize_sources, solution_dir, sources_match
from flashinfer_bench.data import Solution


@dataclass(frozen=True)
class BuildContext:
    device: str
    """"cpu", "cuda" or "cuda:<index>"."""
    cache_root: Path
    scratch_root: Path | None = None
    """With a scratch root, the cache root is only read: entries are written under the scratch root in the
    same layout, and a trusted process moves them into the cache later (``cache.promote_entry``)."""

    @property
    def on_cpu(self) -> bool:
        return self.device.split(":", 1)[0] == "cpu"

    @property
    def write_root(self) -> Path:
        """Where this process writes entries: the scratch root if there is one, else the cache root."""
        return self.scratch_root if self.scratch_root is not None else self.cache_root

    def writes(self, directory: Path) -> bool:
        """Whether ``directory`` lies where this process writes (else it is a cache root entry it reads)."""
        return directory.is_relative_to(self.write_root)

    def entry_dirs(self, solution: Solution) -> tuple[Path, Path]:
        """The solution's entry to read (its folder in the cache root) and the one this process writes (the
        same folder without a scratch root, else the folder of the same layout under the scratch root)."""
        return solution_dir(solution, self.cache_root), solution_dir(solution, self.write_root)

    def sources(self, solution: Solution) -> tuple[Path, bool]:
        """The folder holding the solution's sources, and whether they were there already: its cache entry
        when its sources verify, else materialised in the entry this process writes (without a scratch root, a
        changed cache entry is set aside there; with one, it is left as it is and not used)."""
        cached, written = self.entry_dirs(solution)
        if cached != written and cached.is_dir() and sources_match(solution, cached):
            return cached, True
        return materialize_sources(solution, self.write_root)
