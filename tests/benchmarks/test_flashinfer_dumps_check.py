"""benchmarks/flashinfer_dumps_check.py on the CPU, on a few of FlashInfer's dumps (chosen by name and by glob):
a definition that can run gives its reference PASSED and the perturbed copy not; the others say in one line why
they cannot, printed before the harness runs."""

import json

import pytest
from helpers import REPO, load_benchmark, run_benchmark

DUMPS = REPO.parent / "shared" / "corpus" / "flashinfer-dumps"
pytestmark = [pytest.mark.slow,  # starts the harness's worker: tens of seconds
              pytest.mark.skipif(not DUMPS.is_dir(), reason=f"the FlashInfer dumps are not at {DUMPS}")]


def test_the_check_runs_on_the_cpu_and_says_why_for_the_rest(tmp_path):
    out = tmp_path / "summary.json"
    done = run_benchmark("flashinfer_dumps_check", "--device", "cpu", "--out", str(out), "--definitions",
                         "rmsnorm_h4*", "gemma_rmsnorm_h4608", "rope_h32_kv8_d128", "gemm_fp8_N1536_K7168",
                         "trtllm_gen_routing_e256_k8_t8", "layernorm_quant_h768", cwd=REPO, timeout=900)
    rows = json.loads(out.read_text())["definitions"]
    assert set(rows) == {"rmsnorm_h4096", "gemma_rmsnorm_h4608", "rope_h32_kv8_d128", "gemm_fp8_N1536_K7168",
                         "trtllm_gen_routing_e256_k8_t8", "layernorm_quant_h768"}
    for name in ("rmsnorm_h4096", "gemma_rmsnorm_h4608", "layernorm_quant_h768"):  # the last has a 0-dim input
        assert rows[name]["ran"] and rows[name]["reference"] == "PASSED", rows[name]
        assert rows[name]["perturbed"] == "INCORRECT_NUMERICAL", rows[name]
    assert "_rope_freqs" in rows["rope_h32_kv8_d128"]["why"]
    assert "names axis 'K_div_block_size'" in rows["gemm_fp8_N1536_K7168"]["why"]
    assert "no reference" in rows["trtllm_gen_routing_e256_k8_t8"]["why"]
    assert "6 definitions on cpu: 3 ran, 3 as expected" in done.stdout
    lines = done.stdout.splitlines()
    order = [next(i for i, text in enumerate(lines) if text.startswith(name + "  ")) for name in rows]
    assert all(sum(text.startswith(name + "  ") for text in lines) == 1 for name in rows)  # one line each
    cannot = [at for name, at in zip(rows, order, strict=True) if not rows[name]["ran"]]
    assert max(cannot) < min(at for name, at in zip(rows, order, strict=True) if rows[name]["ran"])


def test_a_definition_s_checks_are_stopped_at_the_time_limit(monkeypatch):
    script = load_benchmark("flashinfer_dumps_check", monkeypatch)
    with pytest.raises(TimeoutError, match="more than 1 s"), script.time_limit(1):
        while True:
            pass
    assert script.selected("top_k_sampling_v128256", ["top_k_*"]) and not script.selected("top_p_x", ["top_k_*"])
