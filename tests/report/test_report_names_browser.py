"""The HTML page with the example trace set's long names, a definition with four var axes, latencies that the
judge's clock set, and hostile names, opened in headless Chromium at 1400 px: nothing clipped, every solution
labelled apart, the axes' values on the x axis, fast_p fitted to the data, the judge-set latencies marked."""

import re

from headless_chromium import embedded_payload, read_page, render
from helpers import write_trace_set
from report_fixtures import result_line

from flashinfer_bench.cli.main import main

MOE = "moe_fp8_block_scale_ds_routing_topk2_ng4_kg2_e8_h128_i128"
GQA = "gqa_paged_decode_h8_kv2_d64_ps1"
GQA_AXES = [{"batch_size": 1, "num_pages": 53, "len_indptr": 2, "num_kv_indices": 37},
            {"batch_size": 4, "num_pages": 98, "len_indptr": 5, "num_kv_indices": 82},
            {"batch_size": 8, "num_pages": 224, "len_indptr": 9, "num_kv_indices": 208}]
HOSTILE = "<img src=x onerror=alert(1)>[bold]"


def definition(name, axes):
    return {"name": name, "op_type": name.split("_")[0], "axes": {a: {"type": "var"} for a in axes},
            "inputs": {"x": {"shape": [axes[0]], "dtype": "float32"}},
            "outputs": {"y": {"shape": [axes[0]], "dtype": "float32"}}, "reference": "def run(x):\n    return x\n"}


def example_like_set(root):
    moe_axes = [{"seq_len": n} for n in (1, 4, 16)]
    write_trace_set(root, [definition(MOE, ["seq_len"]), definition(GQA, list(GQA_AXES[0]))], [], {})
    lines = []
    for name, speedup in ((f"{MOE}_torch", 1.5), (f"{MOE}_triton", 0.1), (f"{MOE}_{HOSTILE}", 3.3)):
        lines += [result_line(MOE, name, axes, "PASSED", 1.0 / speedup, 1.0, spread=0.02, judge_estimated_trials=0)
                  for axes in moe_axes]
    for name, judged in ((f"{GQA}_torch", 1), (f"{GQA}_triton", 0)):
        lines += [result_line(GQA, name, axes, "PASSED", 0.5, 1.0, spread=0.02, judge_estimated_trials=judged)
                  for axes in GQA_AXES]
    (root / "traces").mkdir()
    (root / "traces" / "all.jsonl").write_text("".join(lines))
    return root


def test_the_page_shows_every_name_apart_and_nothing_clipped_at_1400_px(tmp_path):
    root = example_like_set(tmp_path / "set")
    page = tmp_path / "report.html"
    assert main(["report", "visualize", "--local", str(root), "-o", str(page)]) == 0
    payload = embedded_payload(page)
    gqa = next(d for d in payload["definitions"] if d["name"] == GQA)
    assert gqa["label_axes"] == ["batch_size"]  # one of the four var axes tells the workloads apart
    moe = next(d for d in payload["definitions"] if d["name"] == MOE)
    assert [s["label"] for s in moe["solutions"]] == [f"\u2026_{HOSTILE}", "\u2026_torch", "\u2026_triton"]

    rendered = render(page, width=1400)
    contents = read_page(rendered.dom)
    assert rendered.console == [] and contents.selfcheck["data-status"] == "ok", contents.selfcheck
    assert contents.selfcheck["data-clipped"] == ""
    assert contents.scripts == 3 and "<img" not in rendered.dom.split("fib-data")[0]  # the name stayed text
    assert HOSTILE in contents.text
    # the status grid's rows carry the labels whole; the x axis the batch sizes
    for label in ("\u2026_torch", "\u2026_triton"):
        assert label in contents.text
    gqa_section = rendered.dom.split(f'data-plot="latency:{GQA}"')[1].split("</figure>")[0]
    assert "batch_size" in gqa_section and "#1" not in gqa_section
    assert re.search(r">\s*8\s*<", gqa_section)
    # fast_p spans the data: the largest speed-up is 3.3, so p runs to 5, not 10
    fast = rendered.dom.split(f'data-plot="fast_p:{MOE}"')[1].split("</figure>")[0]
    assert "p from 0 to 5" in fast
    # the judge-set latencies: counted in the header, noted, drawn hollow (3 in latency, 3 in speed-up)
    assert "3 latencies set by the judge's clock" in contents.text
    assert "judge-set latencies" in contents.text
    assert len(re.findall(r'class="mark judge"', rendered.dom)) == 3 + 3 + 3  # latency, speed-up, status grid


def test_a_page_that_clips_is_caught(tmp_path):
    """The clipping check can fail: a status label pushed out of its drawing is reported."""
    root = example_like_set(tmp_path / "set")
    page = tmp_path / "report.html"
    assert main(["report", "visualize", "--local", str(root), "-o", str(page)]) == 0
    text = page.read_text()
    page.write_text(text.replace("var labelWidth = Math.ceil(widest) + 14;", "var labelWidth = 20;", 1))
    contents = read_page(render(page, width=1400).dom)
    assert "text '\u2026_torch'" in contents.selfcheck["data-clipped"]
