"""Test-wide settings: Triton kernels run through Triton's interpreter when there is no GPU, tests marked ``gpu``
are skipped there, and what must not be split across pytest-xdist's workers stays on one (``xdist_group``).
The fast loop: ``pytest -m "not slow and not ray"``."""

import os

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

#: The xdist group of the tests that start a local Ray cluster: one at a time, on one worker (they look for the
#: cluster's processes by name, and two clusters on one host compete for its ports).
RAY_GROUP = "ray-cluster"


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups (its own hook of this name)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``gpu`` are skipped, saying so, where there is no GPU. With ``--dist loadgroup`` (scripts/
    test.sh), the tests marked ``ray`` run on one worker, and so do the tests of a module with a module-scoped
    fixture (a server, a cluster, a built trace set: set up once, and its tests may build on one another)."""
    no_gpu = None if torch.cuda.is_available() else pytest.mark.skip(
        reason="needs a CUDA GPU (run on the GPU machine: pytest -m gpu)")
    for item in items:
        if no_gpu is not None and "gpu" in item.keywords:
            item.add_marker(no_gpu)
        group = xdist_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def xdist_group(item: pytest.Item) -> str | None:
    if item.get_closest_marker("xdist_group") is not None:
        return None  # the test names its own
    if "ray" in item.keywords:
        return RAY_GROUP
    fixtures = getattr(item, "_fixtureinfo", None)
    definitions = fixtures.name2fixturedefs.values() if fixtures is not None else ()
    if any(definition.scope in ("module", "package") for chain in definitions for definition in chain):
        return item.nodeid.split("::", 1)[0]
    return None


@pytest.fixture(autouse=True)
def _isolated_build_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Builds go to a per-session cache (per worker under xdist), never the user's."""
    monkeypatch.setenv("FLASHINFER_BENCH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "build-cache"))
