"""Names in the terminal's tables: shortened by what they have in common, never cut into sameness, at any width
(rich consoles of set widths, and the CLI with $COLUMNS); values are never cut either."""

import io
import subprocess
import sys

import pytest
from helpers import child_env, write_trace_set
from report_fixtures import make_trace, result_line
from rich.console import Console

from flashinfer_bench.cli.report import comparison_tables, print_tables, summary_tables
from flashinfer_bench.report.compare import compare_runs
from flashinfer_bench.report.labels import ELLIPSIS, short_labels
from flashinfer_bench.report.results import results
from flashinfer_bench.report.summary import summarize

MOE = "moe_fp8_block_scale_ds_routing_topk2_ng4_kg2_e8_h128_i128"
NAMES = {
    MOE: [f"{MOE}_torch", f"{MOE}_triton"],
    "rmsnorm_h4096": ["rmsnorm_h4096_triton_tuned_v1", "rmsnorm_h4096_triton_tuned_v2", "my_rmsnorm"],
    "gemm_n256_k256": ["alice_gemm_persistent_split_k_autotuned_a", "alice_gemm_persistent_split_k_autotuned_b"],
}


def first_cells(text: str, value_column: int) -> list[str]:
    """The first column of each row of the rich tables in ``text``, its folded lines joined; a row starts on the
    line whose ``value_column`` cell is not empty."""
    rows: list[str] = []
    for line in text.splitlines():
        if not line.startswith("\u2502"):
            continue
        cells = [cell.strip() for cell in line.split("\u2502")[1:-1]]
        if cells[value_column]:
            rows.append(cells[0])
        elif rows:
            rows[-1] += cells[0]
    return rows


def traces():
    return [make_trace(definition, name, f"w{i}", latency=1.0 + i, axes={"n": i})
            for definition, names in NAMES.items() for name in names for i in range(2)]


def test_labels_drop_the_shared_prefix_and_stay_distinct():
    labels, prefix = short_labels(NAMES[MOE], MOE)
    assert prefix == MOE and labels == {f"{MOE}_torch": f"{ELLIPSIS}_torch", f"{MOE}_triton": f"{ELLIPSIS}_triton"}
    labels, prefix = short_labels(NAMES["gemm_n256_k256"], "gemm_n256_k256")
    assert prefix == "alice_gemm_persistent_split_k_autotuned" and set(labels.values()) == {f"{ELLIPSIS}_a",
                                                                                              f"{ELLIPSIS}_b"}
    # a single solution is shortened only by what it shares with the title; names sharing little are kept whole
    assert short_labels(["my_rmsnorm"], "rmsnorm_h4096") == ({"my_rmsnorm": "my_rmsnorm"}, "")
    assert short_labels([f"{MOE}_torch"], MOE)[0] == {f"{MOE}_torch": f"{ELLIPSIS}_torch"}
    assert short_labels(["a_1", "a_2"])[1] == ""  # too short a prefix to be worth dropping


@pytest.mark.parametrize("width", [40, 60, 80, 120, 150, 200])
def test_summary_rows_never_read_the_same_at_any_width(width):
    out = io.StringIO()
    print_tables(Console(file=out, width=width, record=False), summary_tables(summarize(traces())))
    text = out.getvalue()
    rows = first_cells(text, value_column=2)
    expected = [label for definition, names in sorted(NAMES.items())
                for label in sorted(short_labels(names, definition)[0].values())]
    assert sorted(rows) == sorted(expected)
    assert len(set(rows)) == len(rows) == 7
    for line in text.splitlines():  # no value cut short: every latency and speed-up is whole
        assert "\u2026\u2502" not in line.replace(" ", "")
    assert f"{ELLIPSIS} = alice_gemm_persistent_split_k_autotuned" in text.replace("\n", "")


@pytest.mark.parametrize("width", [60, 120])
def test_compare_rows_never_read_the_same(width):
    records = results(traces(), {})
    out = io.StringIO()
    print_tables(Console(file=out, width=width), comparison_tables(compare_runs(records, records))[:-1])
    rows = first_cells(out.getvalue(), value_column=2)
    assert len(rows) == 14 and len(set(rows)) == 7  # two workloads per solution


def test_the_cli_fits_its_tables_to_columns(tmp_path):
    definitions = [{"name": name, "op_type": "x", "axes": {"n": {"type": "var"}},
                    "inputs": {"a": {"shape": ["n"], "dtype": "float32"}},
                    "outputs": {"b": {"shape": ["n"], "dtype": "float32"}}, "reference": "def run(a):\n    return a\n"}
                   for name in NAMES]
    write_trace_set(tmp_path, definitions, [], {})
    lines = [result_line(definition, name, {"n": 1}, "PASSED", 1.0, 2.0, spread=None)
             for definition, names in NAMES.items() for name in names]
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "all.jsonl").write_text("".join(lines))
    for columns in ("120", "150", "200"):
        done = subprocess.run([sys.executable, "-m", "flashinfer_bench.cli.main", "summary", "--local", str(tmp_path)],
                              capture_output=True, text=True, timeout=120, env={**child_env(), "COLUMNS": columns})
        assert done.returncode == 0, done.stderr
        rows = first_cells(done.stdout.split("per author")[0], value_column=2)
        assert len(set(rows)) == len(rows) == 7, (columns, rows)
        assert max(len(line) for line in done.stdout.splitlines()) <= int(columns)
