"""benchmarks/flashinfer_dumps_check.py on the CPU, on a few of FlashInfer's dumps: a definition that can run
gives its reference PASSED and the perturbed copy not; the others say in one line why they cannot."""

import json
import subprocess
import sys

import pytest
from helpers import REPO, child_env

DUMPS = REPO.parent / "shared" / "corpus" / "flashinfer-dumps"
SCRIPT = REPO / "benchmarks" / "flashinfer_dumps_check.py"
pytestmark = [pytest.mark.slow,  # starts the harness's worker: tens of seconds
              pytest.mark.skipif(not DUMPS.is_dir(), reason=f"the FlashInfer dumps are not at {DUMPS}")]


def test_the_check_runs_on_the_cpu_and_says_why_for_the_rest(tmp_path):
    out = tmp_path / "summary.json"
    command = [sys.executable, str(SCRIPT), "--device", "cpu", "--out", str(out), "--definitions", "rmsnorm_h4096",
               "gemma_rmsnorm_h4608", "rope_h32_kv8_d128", "gemm_fp8_N1536_K7168", "trtllm_gen_routing_e256_k8_t8"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, env=child_env(), cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    rows = json.loads(out.read_text())["definitions"]
    for name in ("rmsnorm_h4096", "gemma_rmsnorm_h4608"):
        assert rows[name]["ran"] and rows[name]["reference"] == "PASSED", rows[name]
        assert rows[name]["perturbed"] == "INCORRECT_NUMERICAL", rows[name]
    assert "_rope_freqs" in rows["rope_h32_kv8_d128"]["why"]
    assert "names axis 'K_div_block_size'" in rows["gemm_fp8_N1536_K7168"]["why"]
    assert "no reference" in rows["trtllm_gen_routing_e256_k8_t8"]["why"]
    assert "5 definitions on cpu: 2 ran, 2 as expected" in done.stdout
