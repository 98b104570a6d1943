"""Which device a timing runs on, found from the callable's arguments."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Any

import torch


def iter_tensors(obj: Any) -> Iterator[torch.Tensor]:
    """Tensors in ``obj``, looking inside tuples, lists and dict values (recursively)."""
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (tuple, list)):
        for item in obj:
            yield from iter_tensors(item)
    elif isinstance(obj, Mapping):
        for item in obj.values():
            yield from iter_tensors(item)


def resolve_device(
    device: str | int | torch.device | None,
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
) -> torch.device:
    """The device to time on.

    An explicit ``device`` wins. Otherwise the first CUDA tensor in args/kwargs; with none, the current
    CUDA device when CUDA is available (``fn`` may hold its tensors in a closure), else the CPU.
    """
    if device is not None:
        resolved = torch.device(device) if not isinstance(device, int) else torch.device("cuda", device)
        if resolved.type == "cuda" and resolved.index is None:
            resolved = torch.device("cuda", torch.cuda.current_device())
        return resolved
    for tensor in iter_tensors((args, kwargs)):
        if tensor.device.type == "cuda":
            return tensor.device
    if torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


@functools.cache
def device_name(device: torch.device) -> str:
    """Marketing name of a CUDA device ("NVIDIA H100 80GB HBM3"), or the device type ("cpu")."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return device.type
