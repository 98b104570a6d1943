"""Process-wide torch settings a solution could change, put back after every item.

A persistent worker runs many solutions one after another; one that calls ``torch.set_default_dtype`` or turns
off autograd or TF32 must not change how the reference or the next solution computes.

Only a setting that changed is written back: some setters are far from free (the first
``torch.use_deterministic_algorithms`` call in a process took 4.8 s on the H100 machine, torch 2.11; see
benchmarks/torch_setting_costs.py), and a worker that paid that after every item made isolated evaluations
cost 5 s instead of 0.6 s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch


def _set_deterministic(state: tuple[bool, bool]) -> None:
    torch.use_deterministic_algorithms(state[0], warn_only=state[1])


def _set_matmul_tf32(value: bool) -> None:
    torch.backends.cuda.matmul.allow_tf32 = value


def _set_cudnn_tf32(value: bool) -> None:
    torch.backends.cudnn.allow_tf32 = value


# (read the setting, write it back)
SETTINGS: list[tuple[Callable[[], Any], Callable[[Any], None]]] = [
    (torch.get_default_dtype, torch.set_default_dtype),
    (torch.is_grad_enabled, torch.set_grad_enabled),
    (
        lambda: (
            torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled(),
        ),
        _set_deterministic,
    ),
    (lambda: torch.backends.cuda.matmul.allow_tf32, _set_matmul_tf32),
    (lambda: torch.backends.cudnn.allow_tf32, _set_cudnn_tf32),
]


@contextmanager
def preserved_torch_state() -> Iterator[None]:
    saved = [read() for read, _ in SETTINGS]
    try:
        yield
    finally:
        for (read, write), value in zip(SETTINGS, saved, strict=True):
            if read() != value:
                write(value)
