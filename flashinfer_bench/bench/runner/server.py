"""The process context workers are started from: a forkserver that has torch, the worker code and (for GPU
workers) triton imported, CUDA never initialised there, so a new worker costs a fork, not an interpreter start
and imports (see ``preload``).

This module imports nothing heavy, so the server can be started first thing and import torch while this
process goes on with its own work.
"""

from __future__ import annotations

import multiprocessing
from typing import Any

PRELOAD = ["flashinfer_bench.bench.runner.preload"]

_context: Any = None


def process_context() -> Any:
    global _context
    if _context is None:
        if "forkserver" in multiprocessing.get_all_start_methods():
            _context = multiprocessing.get_context("forkserver")
            _context.set_forkserver_preload(PRELOAD)
        else:
            _context = multiprocessing.get_context("spawn")
    return _context


def start_worker_server() -> None:
    """Start the forkserver now; it imports its modules in the background."""
    context = process_context()
    if context.get_start_method() == "forkserver":
        from multiprocessing import forkserver

        forkserver.ensure_running()
