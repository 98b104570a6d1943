"""Test-wide settings: Triton kernels run through Triton's interpreter when there is no GPU, tests marked ``gpu``
are skipped there, and how pytest-xdist's workers share the tests (scripts/test.sh runs them with ``-n 2 --dist
loadfile``). The fast loop: ``pytest -m "not slow and not ray"``."""

from __future__ import annotations

import os
from typing import Any

import pytest
import torch
from xdist_scopes import APART, TOGETHER, file_of, scope_of

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

#: The terminal's size as the environment gives it, which the CLI's output fits (cli/main.py).
TERMINAL_ENV = ("COLUMNS", "LINES")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """What this process's environment says of the terminal's size, for each xdist worker (below)."""
    node.workerinput["terminal_env"] = {name: os.environ.get(name) for name in TERMINAL_ENV}


def pytest_configure(config: pytest.Config) -> None:
    """An xdist worker starts with COLUMNS=80 and LINES=24 set (its output is a pipe): the CLIs the tests run would
    wrap their output at 80 columns there, and nowhere else. A worker's terminal is its controller's."""
    for name, value in getattr(config, "workerinput", {}).get("terminal_env", {}).items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``gpu`` are skipped, saying so, where there is no GPU. A test marked ``ray`` must be in a
    file of the ``ray`` group. In an xdist worker the tests handed out one by one (the longest: the dataset's MoE
    definitions take minutes) come first, then the files that have a test marked ``slow``, so that none of them is
    left to run alone at the end (in the same order in every worker, as xdist requires)."""
    if not torch.cuda.is_available():
        no_gpu = pytest.mark.skip(reason="needs a CUDA GPU (run on the GPU machine: pytest -m gpu)")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(no_gpu)
    for item in items:
        if "ray" in item.keywords and TOGETHER.get(file_of(item.nodeid)) != "ray":
            raise pytest.UsageError(f"{item.nodeid} is marked ray: add its file to the ray group in {__file__}")
    if hasattr(config, "workerinput"):
        slow_files = {file_of(item.nodeid) for item in items if "slow" in item.keywords}
        items.sort(key=lambda item: (file_of(item.nodeid) not in APART, file_of(item.nodeid) not in slow_files))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` with the groups of tests/xdist_scopes.py; work is handed out in the order the workers collected it."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    config.option.loadscopereorder = False  # xdist would hand out the files with the most tests first
    return Scheduling(config, log)


@pytest.fixture(autouse=True)
def _isolated_build_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Builds go to a per-session cache (per worker under xdist), never the user's."""
    monkeypatch.setenv("FLASHINFER_BENCH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "build-cache"))
