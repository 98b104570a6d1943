#!/usr/bin/env python3
"""Regenerate the workload files and safetensors blobs of the bundled trace sets, deterministically.

    python examples/make_example_blobs.py            # rewrites examples/trace-set and tests/fixtures/trace_sets/dsa

It writes, for every definition whose workloads need explicit tensors (index tensors, per-row sampling
parameters, positive fp8 block scales), the blobs under ``blob/workloads/<op_type>/<definition>/`` and the
matching ``workloads/<op_type>/<definition>.jsonl``; it also writes the workloads of the definitions that
need no blob, so the whole workload set comes from one place. Every tensor comes from a fixed-seed
``torch.Generator`` and every uuid is a uuid5 of the workload's name, so running it twice gives
byte-identical files. Definitions and solutions are hand-written JSON and are not touched.
"""

from __future__ import annotations

import argparse
import json
import shutil
import uuid
from pathlib import Path

import torch
from safetensors.torch import save_file

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "trace-set"
DSA = REPO / "tests" / "fixtures" / "trace_sets" / "dsa"
NAMESPACE = uuid.UUID("6f1c1b7e-2f6a-4c1e-9b7a-0f4c6b1d2e3a")


def _uuid(name: str) -> str:
    return str(uuid.uuid5(NAMESPACE, name))


def _gen(seed: int) -> torch.Generator:
    g = torch.Generator()
    g.manual_seed(seed)
    return g


class Writer:
    def __init__(self, root: Path):
        self.root = root
        for generated in ("workloads", "blob"):  # fully generated here: start from scratch
            shutil.rmtree(root / generated, ignore_errors=True)
        self.lines: dict[tuple[str, str], list[str]] = {}

    def blob(self, op_type: str, definition: str, name: str, tensors: dict[str, torch.Tensor]) -> str:
        rel = f"blob/workloads/{op_type}/{definition}/{name}.safetensors"
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        save_file({k: v.contiguous() for k, v in sorted(tensors.items())}, str(path))
        return rel

    def workload(self, op_type: str, definition: str, name: str, axes: dict, inputs: dict) -> None:
        trace = {
            "definition": definition,
            "workload": {"uuid": _uuid(f"{definition}/{name}"), "axes": axes, "inputs": inputs},
            "solution": None,
            "evaluation": None,
        }
        self.lines.setdefault((op_type, definition), []).append(json.dumps(trace))

    def flush(self) -> None:
        for (op_type, definition), lines in self.lines.items():
            path = self.root / "workloads" / op_type / f"{definition}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(lines) + "\n")


def st(rel: str, key: str) -> dict:
    return {"type": "safetensors", "path": rel, "tensor_key": key}


def _page_table(lens: list[int], unused_pages: int, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, int]:
    """A CSR page table for requests of ``lens`` pages each: indptr, distinct random page ids, and the number
    of pages in the cache (``unused_pages`` more than the requests use)."""
    total = sum(lens)
    num_pages = total + unused_pages
    indptr = torch.tensor([0] + list(torch.tensor(lens).cumsum(0).tolist()), dtype=torch.int32)
    indices = torch.randperm(num_pages, generator=g)[:total].to(torch.int32)
    return indptr, indices, num_pages


def example(root: Path) -> None:
    w = Writer(root)

    # rmsnorm: everything random (hidden_states, weight).
    for bs in (1, 4, 8):
        w.workload("rmsnorm", "rmsnorm_h4096", f"bs{bs}", {"batch_size": bs}, {})

    # gemm: A, B random; M varies.
    for m in (1, 16, 64):
        w.workload("gemm", "gemm_n256_k256", f"m{m}", {"M": m}, {})

    # paged GQA decode (page_size 1): kv_indptr / kv_indices from blobs, sm_scale scalar.
    d = "gqa_paged_decode_h8_kv2_d64_ps1"
    for i, lens in enumerate(([37], [1, 16, 40, 25], [5, 9, 17, 33, 24, 48, 12, 60])):
        total = sum(lens)
        indptr, indices, num_pages = _page_table(lens, 16, _gen(1000 + i))  # 16 pages no request uses
        name = f"bs{len(lens)}_kv{total}"
        rel = w.blob("gqa_paged", d, name, {"kv_indptr": indptr, "kv_indices": indices})
        w.workload(
            "gqa_paged", d, name,
            {"batch_size": len(lens), "num_pages": num_pages, "len_indptr": len(lens) + 1,
             "num_kv_indices": total},
            {"kv_indptr": st(rel, "kv_indptr"), "kv_indices": st(rel, "kv_indices"),
             "sm_scale": {"type": "scalar", "value": 0.125}},
        )

    # top-k / top-p sampling: probs random (softmax-normalised by the framework); per-row top_k, top_p.
    # Supports stay small (top_k <= 4) so that a TVD over ~100 draws is meaningful.
    d = "top_k_top_p_sampling_from_probs_v1024"
    rows = {
        1: ([4], [0.8]),
        4: ([1, 3, 4, 2], [0.9, 1.0, 0.5, 0.7]),
        8: ([2, 4, 3, 4, 1, 3, 4, 2], [1.0, 0.6, 0.8, 0.9, 0.5, 0.75, 1.0, 0.3]),
    }
    for bs, (ks, ps) in rows.items():
        name = f"bs{bs}"
        rel = w.blob("sampling", d, name, {"top_k": torch.tensor(ks, dtype=torch.int32),
                                           "top_p": torch.tensor(ps, dtype=torch.float32)})
        w.workload("sampling", d, name, {"batch_size": bs},
                   {"top_k": st(rel, "top_k"), "top_p": st(rel, "top_p")})

    # fp8 block-scale MoE: fp8 tensors and logits random; positive block scales from blobs.
    d = "moe_fp8_block_scale_ds_routing_topk2_ng4_kg2_e8_h128_i128"
    for i, t in enumerate((1, 4, 16)):
        g = _gen(3000 + i)
        tensors = {
            "hidden_states_scale": 0.5 + torch.rand(1, t, generator=g),             # [H/128, seq_len]
            "gemm1_weights_scale": 0.04 + 0.08 * torch.rand(8, 2, 1, generator=g),  # [E, 2I/128, H/128]
            "gemm2_weights_scale": 0.04 + 0.08 * torch.rand(8, 1, 1, generator=g),  # [E, H/128, I/128]
        }
        name = f"seq{t}"
        rel = w.blob("moe", d, name, tensors)
        inputs = {k: st(rel, k) for k in sorted(tensors)}
        inputs["local_expert_offset"] = {"type": "scalar", "value": 0}
        inputs["routed_scaling_factor"] = {"type": "scalar", "value": 2.5}
        w.workload("moe", d, name, {"seq_len": t}, inputs)

    w.flush()


def dsa(root: Path) -> None:
    w = Writer(root)
    d = "dsa_sparse_attention_h4_d32_topk8_ps4"
    for i, pages in enumerate(([1, 3, 2], [2, 4, 1, 3, 5])):
        total = sum(pages)
        indptr, indices, num_pages = _page_table(pages, 4, _gen(5000 + i))
        name = f"tokens{len(pages)}"
        rel = w.blob("dsa_paged", d, name, {"kv_indptr": indptr, "kv_indices": indices})
        w.workload(
            "dsa_paged", d, name,
            {"num_tokens": len(pages), "num_pages": num_pages, "len_indptr": len(pages) + 1,
             "num_kv_indices": total, "max_seq_len": max(pages) * 4},
            {"kv_indptr": st(rel, "kv_indptr"), "kv_indices": st(rel, "kv_indices")},
        )
    w.flush()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--example-root", type=Path, default=EXAMPLE)
    ap.add_argument("--dsa-root", type=Path, default=DSA)
    args = ap.parse_args()
    example(args.example_root)
    dsa(args.dsa_root)
    print(f"wrote workloads and blobs under {args.example_root} and {args.dsa_root}")


if __name__ == "__main__":
    main()
