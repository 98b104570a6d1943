"""The element types a definition may name, and their torch counterparts (torch is imported lazily)."""

from __future__ import annotations

from enum import Enum
from typing import Any


class DType(str, Enum):
    """Element type of a definition's input or output tensor."""

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

