"""What a routine module hands the runner: one built case, independent of the routine family."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from .refcheck import Tolerance

# A backend factory prepares a backend (plans, converts layouts) and returns the call to time; it raises when the
# backend cannot run this case, which the runner reports without stopping the other backends.
BackendFactory = Callable[[str], Callable[[], Any]]


@dataclass
class Case:
    """``reference`` computes the output in higher precision (float64 on the CPU, float32 on CUDA)."""

    reference: Callable[[], torch.Tensor]
    make_backend: BackendFactory
    flops: float
    num_bytes: float
    tolerance: Tolerance
    verbose_lines: list[str] = field(default_factory=list)
    csv_values: dict[str, Any] = field(default_factory=dict)


def output_tensor(result: Any) -> torch.Tensor:
    """Backends return a tensor, or a tuple/list whose first element is the output (e.g. with the LSE)."""
    return result[0] if isinstance(result, (tuple, list)) else result


def reference_dtype(device: torch.device) -> torch.dtype:
    return torch.float64 if device.type == "cpu" else torch.float32


TORCH_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
