import csv

from flashinfer_bench.routines.cli import main
from flashinfer_bench.routines.testlist import read_testlist
from flashinfer_bench.timing.stats import summarize

DECODE = ("--routine BatchDecodeWithPagedKVCacheWrapper --page_size 4 --batch_size 2 --s_kv 9 --num_qo_heads 4 "
          "--num_kv_heads 2 --head_dim_qk 16 --head_dim_vo 16 --backends torch")
BMM = "--routine bmm_fp8 --batch_size 2 --m 4 --n 16 --k 32 --backends torch"


def test_single_case_prints_flashinfer_benchmark_lines(capsys, fake_timer):
    assert main(f"{DECODE} --refcheck --generate_repro_command -v".split(), timer=fake_timer) == 0
    out = capsys.readouterr().out
    assert "[INFO] args = Namespace(routine='BatchDecodeWithPagedKVCacheWrapper'" in out
    assert ("[INFO] To reproduce this test case, run the following command: "
            f"python3 benchmarks/flashinfer_benchmark.py {DECODE} --refcheck --generate_repro_command -v") in out
    assert "[VERBOSE] Average actual seq len: 9" in out
    assert "[PERF] torch     :: median time 2.000 ms; std 0.100 ms; achieved tflops " in out
    # Paged decode is the one routine whose CUDA graph is on by default -- but only on a CUDA device.
    assert fake_timer.calls[0]["use_cuda_graph"] is False and fake_timer.calls[0]["enable_cupti"] is True


def test_use_cuda_events_disables_cupti(fake_timer):
    assert main(f"{BMM} --use_cuda_events".split(), timer=fake_timer) == 0
    assert fake_timer.calls[0]["enable_cupti"] is False


def test_asking_only_for_backends_that_cannot_run_here_is_status_2(capsys, fake_timer):
    assert main("--routine bmm_fp8 --m 4 --n 16 --k 32 --backends cublas".split(), timer=fake_timer) == 2
    out = capsys.readouterr().out
    assert "[WARNING] cublas for routine bmm_fp8 needs a CUDA device (none available). Skipping." in out
    assert ("[ERROR] none of the backends asked for (cublas) can run here (device cpu); the torch backend runs "
            "everywhere") in out and not fake_timer.calls


def test_bad_input_exits_2(capsys, tmp_path):
    assert main(["--routine", "bmm_fp8", "--m", "4"]) == 2
    assert "[ERROR] bmm_fp8 requires --n, --k" in capsys.readouterr().out
    assert main(["--testlist", str(tmp_path / "missing.txt")]) == 2


def test_testlist_runs_every_line_and_writes_rows(tmp_path, capsys, fake_timer):
    listing = tmp_path / "list.txt"
    listing.write_text(f"# comment\n\n{DECODE}\n--routine bmm_fp8 --m 4\n{BMM}  # trailing comment\n")
    assert [c.lineno for c in read_testlist(str(listing))] == [3, 4, 5]
    out_csv = tmp_path / "r.csv"
    status = main(["--testlist", str(listing), "--output_path", str(out_csv), "--case_tag", "t1",
                   "--generate_repro_command"], timer=fake_timer)
    assert status == 1  # line 4 is invalid; lines 3 and 5 still ran
    assert f"[ERROR] {listing}:4: bmm_fp8 requires --n, --k" in capsys.readouterr().out
    rows = list(csv.DictReader(out_csv.open()))
    assert [(r["routine"], r["backend"]) for r in rows] == [
        ("BatchDecodeWithPagedKVCacheWrapper", "torch"), ("bmm_fp8", "torch")]
    first = rows[0]
    assert (first["case_tag"], first["avg_actual_seq_len"], first["timing_method"], first["device"]) == (
        "t1", "9", "fake_clock", "cpu")
    assert first["repro_command"].endswith("--case_tag t1 --generate_repro_command")
    # the interval the timing result carries (timing/stats.py's exact order statistics), not the samples' range
    stats = summarize(fake_timer.samples_ms)
    assert (float(first["ci95_low_ms"]), float(first["ci95_high_ms"]), first["m"]) == (
        stats.ci95_low_ms, stats.ci95_high_ms, "")
    assert min(fake_timer.samples_ms) < stats.ci95_low_ms < stats.ci95_high_ms < max(fake_timer.samples_ms)


def test_refcheck_mismatch_stops_case_unless_allowed(monkeypatch, capsys, fake_timer):
    from flashinfer_bench.routines import gemm

    real = gemm.torch_gemm

    def wrong_in_low_precision(args, q, dtype):
        out = real(args, q, dtype)
        return out + 1.0 if dtype == gemm.TORCH_DTYPES[args.out_dtype] else out

    monkeypatch.setattr(gemm, "torch_gemm", wrong_in_low_precision)
    assert main(f"{BMM} --refcheck -vv".split(), timer=fake_timer) == 1
    out = capsys.readouterr().out
    assert "[ERROR] Output mismatch between backends torch and reference" in out
    assert "[VVERBOSE] torch: max abs diff" in out and "[PERF]" not in out
    assert main(f"{BMM} --refcheck --allow_output_mismatch".split(), timer=fake_timer) == 0
    assert "[PERF] torch" in capsys.readouterr().out
