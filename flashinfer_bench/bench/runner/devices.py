"""The devices a run uses: every visible CUDA GPU, or the CPU when there is none."""

from __future__ import annotations


def available_devices() -> list[str]:
    import torch

    if torch.cuda.is_available() and torch.cuda.device_count() > 0:
        return [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    return ["cpu"]
