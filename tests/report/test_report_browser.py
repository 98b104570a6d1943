"""The HTML report opened in a real browser (headless Chromium): every plot drawn with data, nothing logged, the
self-check marker set, nothing fetched from elsewhere, and a screenshot that shows something."""

import shutil
import subprocess
import sys

from headless_chromium import embedded_payload, expected_plots, png_summary, read_page, render, screenshot
from helpers import child_env, scale_add_set
from report_fixtures import write_results_set

from flashinfer_bench.cli.main import main

CLI = [sys.executable, "-m", "flashinfer_bench.cli.main"]


def assert_rendered_cleanly(page):
    rendered = render(page)
    contents = read_page(rendered.dom)
    assert rendered.console == [], rendered.console  # the page logged nothing: no error, no warning
    assert contents.selfcheck.get("data-status") == "ok", contents.selfcheck
    assert not contents.selfcheck.get("data-errors")
    expected = expected_plots(embedded_payload(page))
    assert set(contents.plots) == expected
    assert int(contents.selfcheck["data-plots"]) == len(expected)
    empty = [plot for plot, marks in contents.plots.items() if marks == 0]
    assert empty == []
    # nothing loaded from elsewhere: links only to the page's own anchors, scripts only inline
    assert all(link.startswith("#") for link in contents.links), contents.links
    assert contents.scripts == 3  # the error hook, the data, the renderer: a log's <script> stayed text
    return contents


def test_report_with_a_baseline_renders_every_plot(tmp_path):
    base = write_results_set(tmp_path / "base")
    candidate = write_results_set(tmp_path / "candidate", change={"rms_triton": 1.2, "dec_triton": 0.8},
                                  broken={("rms_ref", 4)}, judge_bounded={"dec_triton"})
    page = tmp_path / "out" / "report.html"
    assert main(["report", "visualize", "--local", str(candidate), "--baseline", str(base), "-o", str(page)]) == 0
    contents = assert_rendered_cleanly(page)
    # dec_triton's latencies were set by the judge's clock: SAME, with no bound either way, on each of its 4 rows
    assert contents.text.count("any\u2020") == 4
    # 2 definitions: latency, speed-up, status, fast_p and comparison each; fast_p and win@p per author
    assert len(contents.plots) == 12
    # one mark per PASSED evaluation in the latency plots (+ the reference's), one per evaluation in the grids
    assert contents.plots["status:rmsnorm_h128"] == 15 and contents.plots["status:decode_h8"] == 12
    assert contents.plots["latency:decode_h8"] == 8 + 4
    assert contents.plots["compare:rmsnorm_h128"] == 13  # 15 evaluations, 2 not PASSED in one of the runs

    png = screenshot(page, tmp_path / "report.png")
    width, height, distinct = png_summary(png)
    assert (width, height) == (1400, 2000) and distinct > 50
    kept = tmp_path.parent / "report-screenshot.png"  # kept with the session's temporary files for a look
    shutil.copy(png, kept)


def test_a_page_whose_script_fails_is_caught(tmp_path):
    """The check above can fail: a report whose renderer throws is reported by the page and by the test."""
    page = tmp_path / "report.html"
    assert main(["report", "visualize", "--local", str(write_results_set(tmp_path / "set")), "-o", str(page)]) == 0
    text = page.read_text()
    page.write_text(text.replace("function definitionSection(main, def, index) {",
                                 "function definitionSection(main, def, index) {\n    null.boom;", 1))
    rendered = render(page)
    contents = read_page(rendered.dom)
    assert contents.selfcheck["data-status"] == "error"
    assert "null" in contents.selfcheck["data-errors"]
    assert any("null" in line for line in rendered.console)  # and logged as an error

    page.write_text(text.replace('var SVG_NS = "http', 'var SVG_NS = = "http', 1))  # a script that does not parse
    rendered = render(page)
    contents = read_page(rendered.dom)
    assert contents.selfcheck["data-status"] == "error" and "SyntaxError" in contents.selfcheck["data-errors"]
    assert any("SyntaxError" in line for line in rendered.console)


def test_an_empty_run_is_a_valid_page(tmp_path):
    root = scale_add_set(tmp_path / "set", {"ok": "def run(x, y):\n    return x * 2 + y\n"})
    page = tmp_path / "report.html"
    assert main(["report", "visualize", "--local", str(root), "-o", str(page)]) == 0
    contents = assert_rendered_cleanly(page)
    assert contents.plots == {}
    assert "No result traces" in render(page).dom


def test_results_of_a_real_run_render(tmp_path):
    """Traces the tool itself wrote (a CPU run), then the report, as a user would run them."""
    root = scale_add_set(tmp_path / "set", {"good": "def run(x, y):\n    return x * 2 + y\n",
                                            "bad": "def run(x, y):\n    return x * 3 + y\n"}, sizes=(8, 64, 512))
    run = subprocess.run([*CLI, "run", "--local", str(root), "--iterations", "3", "--warmup-runs", "1",
                          "--num-trials", "1"], capture_output=True, text=True, timeout=300, env=child_env())
    assert run.returncode == 0, run.stderr
    page = tmp_path / "report.html"
    done = subprocess.run([*CLI, "report", "visualize", "--local", str(root), "-o", str(page)], capture_output=True,
                          text=True, timeout=120, env=child_env())
    assert done.returncode == 0, done.stderr
    assert "6 evaluations of 1 definitions" in done.stdout
    assert done.stderr == ""  # no progress output off a terminal
    contents = assert_rendered_cleanly(page)
    assert contents.plots["status:scale_add"] == 6 and contents.plots["latency:scale_add"] >= 3
