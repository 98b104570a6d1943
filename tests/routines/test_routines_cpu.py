"""The routine CLI on a CPU: a GPU-sized case is shrunk to finish in seconds and says so, throughputs are never
printed as 0.000, Ctrl-C is one line, and a testlist skips (and counts) the lines nothing can run here."""

import os
import signal
import subprocess
import sys

from helpers import REPO, child_env

from flashinfer_bench.routines import log
from flashinfer_bench.routines.args import parse_case
from flashinfer_bench.routines.cli import main
from flashinfer_bench.routines.cpu_sizes import CPU_FLOP_BUDGET, estimated_flops, shrink_for_cpu
from flashinfer_bench.routines.log import throughput

README_DECODE = ("--routine BatchDecodeWithPagedKVCacheWrapper --backends fa2 torch --page_size 16 --batch_size 32 "
                 "--s_qo 1 --s_kv 2048 --num_qo_heads 32 --num_kv_heads 8 --head_dim_qk 128 --head_dim_vo 128 "
                 "--refcheck")
FP8_GEMM = "--routine gemm_fp8_nt_groupwise --backends torch --m 8192 --n 4096 --k 16384 --tile_size 128"


def test_the_readme_decode_example_is_shrunk_on_a_cpu_and_says_so(capsys, fake_timer):
    assert main(README_DECODE.split(), timer=fake_timer) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if "so that this case finishes in seconds" in line)
    assert "--batch_size 32 -> " in line and "--s_kv 2048 -> " in line and "--num_iters 30 -> 3" in line
    assert "--full_size_on_cpu keeps the case as given" in line
    (call,) = fake_timer.calls
    assert (call["num_iters"], call["dry_run_iters"]) == (3, 1)
    assert "[PERF] torch" in out and "achieved tflops 0.000 " not in out


def test_shrinking_stays_within_the_budget_and_keeps_the_case_valid():
    for case in (README_DECODE, FP8_GEMM):
        args = parse_case(case.split())
        before = estimated_flops(args)
        changes = shrink_for_cpu(args, case.split())
        assert estimated_flops(args) <= CPU_FLOP_BUDGET < before, case
        assert changes
    gemm = parse_case(FP8_GEMM.split())
    shrink_for_cpu(gemm, FP8_GEMM.split())
    assert gemm.n % 128 == 0 and gemm.k % 128 == 0  # still multiples of the tile


def test_counts_given_and_full_size_are_kept(capsys, fake_timer):
    above_budget = README_DECODE.replace("--batch_size 32", "--batch_size 2").replace("--s_kv 2048", "--s_kv 1024")
    above_budget = above_budget.replace(" --refcheck", "")
    assert estimated_flops(parse_case(above_budget.split())) > CPU_FLOP_BUDGET
    assert main(f"{above_budget} --num_iters 7 --full_size_on_cpu".split(), timer=fake_timer) == 0
    assert "finishes in seconds" not in capsys.readouterr().out
    assert fake_timer.calls[0]["num_iters"] == 7
    args = parse_case(f"{README_DECODE} --num_iters 7".split())
    changes = shrink_for_cpu(args, f"{README_DECODE} --num_iters 7".split())
    assert args.num_iters == 7 and not any("num_iters" in change for change in changes)


def test_throughput_is_never_a_false_zero():
    assert throughput(0.000141) == "0.000141" and throughput(12.3456) == "12.346" and throughput(None) == "n/a"


def test_a_testlist_skips_lines_that_cannot_run_here(tmp_path, capsys, fake_timer):
    testlist = tmp_path / "t.txt"
    small = "--routine bmm_fp8 --m 4 --n 16 --k 32"
    testlist.write_text(f"{small} --backends cublas\n{small} --backends torch\n")
    assert main(["--testlist", str(testlist)], timer=fake_timer) == 0
    out = capsys.readouterr().out
    assert f"[WARNING] {testlist}:1: skipped: none of the backends asked for (cublas) can run here" in out
    assert "[WARNING] 1 of 2 test cases skipped" in out and "[INFO] case 2 of 2" in out
    testlist.write_text(f"{small} --backends cublas\n")
    assert main(["--testlist", str(testlist)], timer=fake_timer) == 2  # nothing could run at all


def interrupts_as_in_a_terminal() -> None:
    """In the child before it runs: SIGINT at its default and not blocked, as under a shell. A child inherits an
    ignored or blocked SIGINT from the pytest worker that starts it, whose state depends on what ran there before
    (in two full runs of the suite the CLI here went on for 120 s after the signal; alone it stopped in 0.3 s)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def test_a_line_goes_out_in_one_write(monkeypatch):
    """A Ctrl-C lands between writes, never inside one: a line and its newline written apart let the interruption's
    "[ERROR]" line end up on the end of an "[INFO]" one (test_ctrl_c_is_one_line, seen once in CI)."""
    writes: list[str] = []

    class Stdout:
        def write(self, text: str) -> int:
            writes.append(text)
            return len(text)

        def flush(self) -> None:
            pass

    monkeypatch.setattr(sys, "stdout", Stdout())
    log.info("FlashInfer not available: ModuleNotFoundError")
    log.error("interrupted (Ctrl-C); results already written are kept")
    log.line(log.perf_line("fa2", 0.5, 0.01, 1.0, 2.0))
    assert writes[0] == "[INFO] FlashInfer not available: ModuleNotFoundError\n"
    assert writes[1] == "[ERROR] interrupted (Ctrl-C); results already written are kept\n"
    assert len(writes) == 3 and writes[2].startswith("[PERF] fa2") and writes[2].endswith("\n")


def test_ctrl_c_is_one_line(tmp_path):
    """A real SIGINT to the CLI's process group (what Ctrl-C sends) while it runs a full-size case."""
    command = [sys.executable, str(REPO / "benchmarks" / "flashinfer_benchmark.py"), *README_DECODE.split(),
               "--full_size_on_cpu", "--num_iters", "1000"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=child_env(), start_new_session=True, preexec_fn=interrupts_as_in_a_terminal)
    try:
        for line in process.stdout:
            if line.startswith("[VERBOSE]") or "Running test" in line:
                break
        os.killpg(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, (out, err)
    assert "Traceback" not in out + err
    assert out.strip().splitlines()[-1] == "[ERROR] interrupted (Ctrl-C); results already written are kept"
