"""The element types a definition may name, and their torch counterparts (torch is imported lazily)."""

from __future__ import annotations

from enum import Enum
from typing import Any


class DType(str, Enum):
    """Element type of a definition's input or output tensor."""

    FLOAT64 = "float64"
    FLOAT32 = "float32"
    FLOAT16 = "float16"
    BFLOAT16 = "bfloat16"
    FLOAT8_E4M3FN = "float8_e4m3fn"
    FLOAT8_E5M2 = "float8_e5m2"
    FLOAT4_E2M1 = "float4_e2m1"
    INT64 = "int64"
    INT32 = "int32"
    INT16 = "int16"
    INT8 = "int8"
    UINT32 = "uint32"
    UINT8 = "uint8"
    BOOL = "bool"

    @property
    def is_floating(self) -> bool:
        return self.value.startswith(("float", "bfloat"))

    @property
    def is_low_bit(self) -> bool:
        return self.value.startswith(("float8", "float4"))

    def to_torch(self) -> Any:
        """The torch dtype; float4_e2m1 maps to torch's packed two-per-byte type."""
        import torch

        name = "float4_e2m1fn_x2" if self is DType.FLOAT4_E2M1 else self.value
        return getattr(torch, name)


class OpenDType(str, Enum):
    """A ``dtype`` FlashInfer writes that names no fixed element type (see docs/trace-format.md).

    ``unknown``: a tensor whose element type is chosen when the call is planned (index arrays of the wrapper
    APIs), or an optional tensor the traced call left out. ``string`` and ``dtype``: host arguments that are a
    string (``mask_type="causal"``) or a torch dtype (``out_dtype=torch.bfloat16``), never tensors.
    Such an input cannot be drawn at random: it comes from the definition's ``init`` or from the workload.
    """

    UNKNOWN = "unknown"
    STRING = "string"
    DTYPE = "dtype"


def parse_dtype(value: Any) -> DType | OpenDType:
    """A definition's ``dtype`` field; a ValueError lists every accepted value."""
    for kind in (DType, OpenDType):
        try:
            return kind(value)
        except ValueError:
            continue
    accepted = ", ".join(f"'{d.value}'" for d in (*DType, *OpenDType))
    raise ValueError(f"Input should be {accepted}")
