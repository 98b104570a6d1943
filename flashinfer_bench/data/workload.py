"""Workload: concrete axis lengths and where each input comes from."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from flashinfer_bench.data.definition import NonEmptyStr, _Model


class RandomInput(_Model):
    """Drawn afresh for every trial (standard normal for floating types)."""

    type: Literal["random"] = "random"


class ScalarInput(_Model):
    type: Literal["scalar"] = "scalar"
    value: int | float | bool


class SafetensorsInput(_Model):
    """A tensor stored in a safetensors file, its path relative to the trace set's root."""

    type: Literal["safetensors"] = "safetensors"
    path: NonEmptyStr
    tensor_key: NonEmptyStr


#: As upstream, a plain union: ``type`` may be left out and the best-fitting kind is taken.
InputSpec = RandomInput | SafetensorsInput | ScalarInput


class Workload(_Model):
    """Field order is the order upstream writes: ``axes, inputs, uuid``. Axis lengths are read as upstream
    reads them: ``7``, ``7.0`` and ``"7"`` are all 7; ``7.5`` and negative lengths are rejected."""

    axes: dict[str, Annotated[int, Field(ge=0)]]
    inputs: dict[str, InputSpec]
    uuid: NonEmptyStr
