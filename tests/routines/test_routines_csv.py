import csv

import pytest

from flashinfer_bench.routines.csv_output import COLUMNS, append_row, format_row


def test_columns_follow_the_spec_order():
    assert COLUMNS[:6] == ["routine", "median_time", "std_time", "tflops", "tb_per_sec", "backend"]
    attn = ["page_size", "batch_size", "s_qo", "s_kv", "num_qo_heads", "num_kv_heads", "head_dim_qk",
            "head_dim_vo", "head_dim_ckv", "head_dim_kpe", "causal", "q_dtype", "kv_dtype", "avg_actual_seq_len",
            "random_actual_seq_len"]
    assert COLUMNS[6:6 + len(attn)] == attn
    gemm = ["m", "n", "k", "group_size", "tile_size", "scale_major_mode", "out_dtype", "mma_sm",
            "use_128x4_sf_layout"]
    start = COLUMNS.index("m")
    assert COLUMNS[start:start + len(gemm)] == gemm
    moe = ["num_tokens", "hidden_size", "intermediate_size", "num_experts", "top_k", "n_group", "topk_group",
           "routed_scaling_factor", "routing_method"]
    start = COLUMNS.index("num_tokens")
    assert COLUMNS[start:start + len(moe)] == moe
    general = ["refcheck", "no_cuda_graph", "allow_output_mismatch", "random_seed", "case_tag",
               "generate_repro_command", "repro_command"]
    start = COLUMNS.index("refcheck")
    assert COLUMNS[start:start + len(general)] == general
    assert COLUMNS.index("device") > COLUMNS.index("repro_command")
    assert {"timing_method", "ci95_low_ms", "ci95_high_ms"} < set(COLUMNS[COLUMNS.index("device"):])
    assert len(COLUMNS) == len(set(COLUMNS))


def test_rows_append_with_one_header(tmp_path):
    path = tmp_path / "out.csv"
    append_row(str(path), {"routine": "bmm_fp8", "backend": "torch", "median_time": 1.5})
    append_row(str(path), {"routine": "mm_fp4", "backend": "torch", "case_tag": None})
    rows = list(csv.DictReader(path.open()))
    assert [r["routine"] for r in rows] == ["bmm_fp8", "mm_fp4"]
    assert rows[0]["median_time"] == "1.5" and rows[1]["case_tag"] == "" and rows[0]["page_size"] == ""


def test_unknown_column_is_refused():
    with pytest.raises(KeyError):
        format_row({"nonsense": 1})
