"""Test-wide settings: Triton kernels run through Triton's interpreter when there is no GPU."""

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")


@pytest.fixture(autouse=True)
def _isolated_build_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Builds go to a per-session cache, never the user's."""
    monkeypatch.setenv("FLASHINFER_BENCH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "build-cache"))
