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


InputSpec = Annotated[RandomInput | ScalarInput | SafetensorsInput, Field(discriminator="type")]


class Workload(_Model):
    uuid: NonEmptyStr
    axes: dict[str, Annotated[int, Field(strict=True, ge=0)]] = Field(default_factory=dict)
    inputs: dict[str, InputSpec] = Field(default_factory=dict)
