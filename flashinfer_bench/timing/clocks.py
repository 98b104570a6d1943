"""SM clock readings through NVML (nvidia-ml-py, an optional extra), imported lazily once per process."""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Any

import torch

# A clock that fell by more than this fraction during a measurement makes the result suspect.
CLOCK_DROP_LIMIT = 0.10


@functools.cache
def _nvml() -> ModuleType | None:
    try:
        import pynvml  # type: ignore[import-not-found]

        pynvml.nvmlInit()
    except Exception:  # not installed, or no driver: clocks are simply unknown
        return None
    return pynvml


@functools.cache
def _handle(device: torch.device) -> Any | None:
    nvml = _nvml()
    if nvml is None:
        return None
    # By UUID, so CUDA_VISIBLE_DEVICES reordering cannot pick the wrong GPU.
    try:
        return nvml.nvmlDeviceGetHandleByUUID(f"GPU-{torch.cuda.get_device_properties(device).uuid}")
    except Exception:
        try:
            return nvml.nvmlDeviceGetHandleByIndex(device.index or 0)
        except Exception:
            return None


def sm_clock_mhz(device: torch.device) -> int | None:
    """Current SM clock of a CUDA device in MHz, or None where NVML cannot tell."""
    if device.type != "cuda":
        return None
    nvml, handle = _nvml(), _handle(device)
    if nvml is None or handle is None:
        return None
    try:
        return int(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM))
    except Exception:
        return None


def clock_drop_warning(before: int | None, after: int | None) -> str | None:
    """A warning when the SM clock fell by more than CLOCK_DROP_LIMIT between two readings."""
    if before is None or after is None or before <= 0:
        return None
    drop = (before - after) / before
    if drop > CLOCK_DROP_LIMIT:
        return (
            f"SM clock fell from {before} MHz to {after} MHz ({100 * drop:.0f}%) during the measurement "
            "(thermal or power throttling?); the times may be inflated."
        )
    return None
