"""Test-wide settings: Triton kernels run through Triton's interpreter when there is no GPU, and tests marked
``gpu`` are skipped there. The fast loop: ``pytest -m "not slow and not ray"``."""

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``gpu`` are skipped, saying so, where there is no GPU."""
    if torch.cuda.is_available():
        return
    no_gpu = pytest.mark.skip(reason="needs a CUDA GPU (run on the GPU machine: pytest -m gpu)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(no_gpu)


@pytest.fixture(autouse=True)
def _isolated_build_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Builds go to a per-session cache, never the user's."""
    monkeypatch.setenv("FLASHINFER_BENCH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "build-cache"))
