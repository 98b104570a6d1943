"""Process-wide torch settings a solution could change, put back after every item.

A persistent worker runs many solutions one after another; one that calls ``torch.set_default_dtype`` or turns
off autograd or TF32 must not change how the reference or the next solution computes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def preserved_torch_state() -> Iterator[None]:
    default_dtype = torch.get_default_dtype()
    grad_enabled = torch.is_grad_enabled()
    deterministic = torch.are_deterministic_algorithms_enabled()
    matmul_tf32 = torch.backends.cuda.matmul.allow_tf32
    cudnn_tf32 = torch.backends.cudnn.allow_tf32
    try:
        yield
    finally:
        torch.set_default_dtype(default_dtype)
        torch.set_grad_enabled(grad_enabled)
        torch.use_deterministic_algorithms(deterministic)
        torch.backends.cuda.matmul.allow_tf32 = matmul_tf32
        torch.backends.cudnn.allow_tf32 = cudnn_tf32
