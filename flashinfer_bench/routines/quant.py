"""FP8 and NVFP4 quantisation in plain torch (any device), and the matching dequantisation.

Conventions (those of FlashInfer's APIs): a *scale* is a dequantisation factor, ``x ~= q.float() * scale``.
NVFP4: values are FP4 e2m1 (sign + {0, 0.5, 1, 1.5, 2, 3, 4, 6}), two per byte (low nibble = even element);
every 16 consecutive elements along the last axis share an FP8 e4m3 block scale, and a float32 global scale
``gs`` maps the tensor into the block scales' range: ``x ~= e2m1 * block_scale / gs``.
"""

from __future__ import annotations

import torch

FP8_DTYPES = {"fp8_e4m3": torch.float8_e4m3fn, "fp8_e5m2": torch.float8_e5m2}
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
E2M1_MAX = 6.0
E4M3_MAX = 448.0
NVFP4_BLOCK = 16


def fp8_max(dtype: torch.dtype) -> float:
    return float(torch.finfo(dtype).max)


def quantize_fp8_per_tensor(x: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """One float32 scale for the whole tensor; returns (fp8 tensor, 0-dim scale)."""
    scale = (x.abs().max().float() / fp8_max(dtype)).clamp(min=1e-12)
    return (x.float() / scale).clamp(-fp8_max(dtype), fp8_max(dtype)).to(dtype), scale


def quantize_fp8_blockwise(
    x: torch.Tensor, block_rows: int, block_cols: int, dtype: torch.dtype = torch.float8_e4m3fn
) -> tuple[torch.Tensor, torch.Tensor]:
    """Scale per (block_rows x block_cols) tile of the last two axes; scales have shape [..., R/br, C/bc]."""
    *lead, rows, cols = x.shape
    tiles = x.float().reshape(*lead, rows // block_rows, block_rows, cols // block_cols, block_cols)
    amax = tiles.abs().amax(dim=(-3, -1), keepdim=True)
    scale = (amax / fp8_max(dtype)).clamp(min=1e-12)
    q = (tiles / scale).clamp(-fp8_max(dtype), fp8_max(dtype)).to(dtype).reshape(x.shape)
    return q, scale.squeeze(-1).squeeze(-2)


def dequantize_blockwise(q: torch.Tensor, scale: torch.Tensor, block_rows: int, block_cols: int) -> torch.Tensor:
    """Inverse of :func:`quantize_fp8_blockwise`, in float32."""
    expanded = scale.repeat_interleave(block_rows, dim=-2).repeat_interleave(block_cols, dim=-1)
    return q.float() * expanded


def _e2m1_codes(x: torch.Tensor) -> torch.Tensor:
    """Round to the nearest e2m1 value; return 4-bit codes (bit 3 = sign, bits 0-2 = index into E2M1_VALUES)."""
    grid = torch.tensor(E2M1_VALUES, device=x.device)
    midpoints = (grid[1:] + grid[:-1]) / 2
    index = torch.bucketize(x.abs().clamp(max=E2M1_MAX), midpoints)
    return (index | ((x < 0).to(torch.int64) << 3)).to(torch.uint8)


def e2m1_decode(codes: torch.Tensor) -> torch.Tensor:
    grid = torch.tensor(E2M1_VALUES, device=codes.device)
    magnitude = grid[(codes & 7).long()]
    return torch.where((codes & 8) != 0, -magnitude, magnitude)


def nvfp4_global_scale(x: torch.Tensor) -> torch.Tensor:
    """FlashInfer's convention: ``gs = 448 * 6 / amax(x)`` (float32, 0-dim)."""
    return (E4M3_MAX * E2M1_MAX / x.abs().max().float().clamp(min=1e-12)).float()


def quantize_nvfp4(x: torch.Tensor, global_scale: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Return (packed uint8 [..., K/2], e4m3 block scales [..., K/16]) in the linear (unswizzled) layout."""
    *lead, k = x.shape
    blocks = x.float().reshape(*lead, k // NVFP4_BLOCK, NVFP4_BLOCK)
    block_scale = (blocks.abs().amax(dim=-1) / E2M1_MAX * global_scale).clamp(max=E4M3_MAX)
    block_scale = block_scale.to(torch.float8_e4m3fn)
    denom = (block_scale.float() / global_scale).unsqueeze(-1)
    scaled = torch.where(denom > 0, blocks / torch.where(denom > 0, denom, 1.0), 0.0)
    codes = _e2m1_codes(scaled).reshape(*lead, k)
    packed = codes[..., 0::2] | (codes[..., 1::2] << 4)
    return packed, block_scale


def dequantize_nvfp4(packed: torch.Tensor, block_scale: torch.Tensor, global_scale: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`quantize_nvfp4`, in float32."""
    *lead, half = packed.shape
    codes = torch.stack((packed & 0xF, packed >> 4), dim=-1).reshape(*lead, half * 2)
    values = e2m1_decode(codes).reshape(*lead, half * 2 // NVFP4_BLOCK, NVFP4_BLOCK)
    return (values * (block_scale.float() / global_scale).unsqueeze(-1)).reshape(*lead, half * 2)
