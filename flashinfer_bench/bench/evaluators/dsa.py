"""DeepSeek sparse attention over paged KV: selected indices are compared as sets, outputs within tolerance."""

from __future__ import annotations

from typing import Any

import torch

from flashinfer_bench.bench.config import ResolvedEvalConfig
from flashinfer_bench.bench.evaluators.compare import ValueErrors, as_tensor
from flashinfer_bench.bench.evaluators.evaluator import Evaluator
from flashinfer_bench.bench.inputs import holds_floats
from flashinfer_bench.data import Definition


def is_index_output(definition: Definition, name: str, ref: Any) -> bool:
    """An output of indices: named so, and not floating (as its dtype says, or the reference's tensor where the
    dtype is open)."""
    return "indices" in name and not holds_floats(definition.outputs[name], as_tensor(ref))


def set_errors(out: Any, ref: Any) -> ValueErrors:
    """Rows of indices match when they hold the same set (order and -1 padding position do not matter)."""
    out_rows = as_tensor(out).reshape(-1, as_tensor(out).shape[-1]).to(as_tensor(ref).device).long()
    ref_rows = as_tensor(ref).reshape(-1, as_tensor(ref).shape[-1]).long()
    same = (torch.sort(out_rows, dim=-1).values == torch.sort(ref_rows, dim=-1).values).all(dim=-1)
    row_width = ref_rows.shape[-1]
    mismatched_rows = int((~same).sum())
    return ValueErrors(
        max_absolute_error=float(mismatched_rows > 0),
        max_relative_error=float(mismatched_rows > 0),
        matched=int(same.sum()) * row_width,
        total=ref_rows.shape[0] * row_width,
    )


class DSAEvaluator(Evaluator):
    @classmethod
    def can_evaluate(cls, definition: Definition) -> bool:
        return definition.op_type.replace("-", "_").startswith("dsa")

    @classmethod
    def compare_output(cls, definition: Definition, name: str, out: Any, ref: Any,
                       cfg: ResolvedEvalConfig) -> ValueErrors:
        if is_index_output(definition, name, ref):
            return set_errors(out, ref)
        return super().compare_output(definition, name, out, ref, cfg)
