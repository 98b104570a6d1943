"""Opening a page in headless Chromium (Debian's package): the DOM after its scripts ran, what the page logged to
its console, and a screenshot; and reading back what the DOM holds."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import zlib
from collections import Counter
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest

#: Set to 1 to skip the browser tests on a machine without Chromium (they fail there otherwise).
SKIP_ENV = "FLASHINFER_BENCH_SKIP_BROWSER"


def chromium() -> str:
    """The Chromium executable; fails the test (skips it only when SKIP_ENV=1) when there is none."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    if os.environ.get(SKIP_ENV) == "1":
        pytest.skip(f"no chromium on PATH and {SKIP_ENV}=1")
    pytest.fail(f"no chromium on PATH: scripts/bootstrap.sh installs Debian's package (or set {SKIP_ENV}=1)")


def _run(page: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        command = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                   "--disable-extensions", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
                   *flags, page.resolve().as_uri()]
        return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


@dataclass
class Rendered:
    dom: str
    #: Messages the page logged to its console (Chromium writes them to stderr as INFO:CONSOLE lines).
    console: list[str]


def render(page: Path, width: int | None = None, height: int = 2000) -> Rendered:
    """Load ``page`` (in a window ``width`` pixels wide, when given), let its scripts run, and return the
    resulting DOM."""
    size = [f"--window-size={width},{height}"] if width else []
    done = _run(page, "--dump-dom", *size)
    assert done.returncode == 0, done.stderr[-2000:]
    return Rendered(done.stdout, [line for line in done.stderr.splitlines() if ":CONSOLE" in line])


def screenshot(page: Path, png: Path, width: int = 1400, height: int = 2000) -> Path:
    done = _run(page, "--hide-scrollbars", f"--window-size={width},{height}", f"--screenshot={png}")
    assert done.returncode == 0 and png.is_file(), done.stderr[-2000:]
    return png


def png_summary(png: Path) -> tuple[int, int, int]:
    """(width, height, distinct byte values of the decompressed pixel rows): a blank page has a handful."""
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    position, chunks = 8, []
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        if kind == b"IDAT":
            chunks.append(data[position + 8:position + 8 + length])
        position += 12 + length
    pixels = zlib.decompress(b"".join(chunks))
    return width, height, len(set(pixels))


@dataclass
class PageContents:
    """What a rendered report's DOM holds."""

    #: data-plot id -> the number of data marks drawn inside that figure
    plots: dict[str, int] = field(default_factory=dict)
    selfcheck: dict[str, str] = field(default_factory=dict)
    scripts: int = 0
    #: every src / href attribute value (a self-contained page links only to its own anchors)
    links: list[str] = field(default_factory=list)
    tags: Counter[str] = field(default_factory=Counter)
    #: the text the page shows (outside scripts and styles)
    text: str = ""


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.contents = PageContents()
        self.figure: str | None = None
        self.hidden: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        contents = self.contents
        contents.tags[tag] += 1
        if tag == "script":
            contents.scripts += 1
        if tag in ("script", "style"):
            self.hidden = tag
        contents.links += [values[name] for name in ("src", "href") if name in values]
        if tag == "figure" and "data-plot" in values:
            self.figure = values["data-plot"]
            contents.plots[self.figure] = 0
        if self.figure is not None and "mark" in values.get("class", "").split():
            contents.plots[self.figure] += 1
        if values.get("id") == "fib-selfcheck":
            contents.selfcheck = values

    def handle_endtag(self, tag: str) -> None:
        if tag == "figure":
            self.figure = None
        if tag == self.hidden:
            self.hidden = None

    def handle_data(self, data: str) -> None:
        if self.hidden is None:
            self.contents.text += data


def read_page(dom: str) -> PageContents:
    reader = _Reader()
    reader.feed(dom)
    return reader.contents


def embedded_payload(page: Path) -> dict:
    """The JSON data a written report carries."""
    found = re.search(r'<script type="application/json" id="fib-data">(.*?)</script>', page.read_text(), re.S)
    assert found, "no embedded data"
    return json.loads(found.group(1))


def expected_plots(payload: dict) -> set[str]:
    """The plots a report must draw for its data: the rule the page follows, written independently."""
    plots = set()
    if any(a["fast_p"] for a in payload["authors"]):
        plots.add("authors:fast_p")
    if any(a["win_p"] for a in payload["authors"]):
        plots.add("authors:win_p")
    for d in payload["definitions"]:
        name, points = d["name"], [p for s in d["solutions"] for p in s["points"]]
        plots.add(f"status:{name}")
        if any(p["ms"] is not None for p in points):
            plots.add(f"latency:{name}")
        if any(p["sp"] is not None for p in points):
            plots.add(f"speedup:{name}")
        if any(s["fast_p"] for s in d["solutions"]):
            plots.add(f"fast_p:{name}")
        if d["comparison"] and any(m["ratio"] is not None for m in d["comparison"]["matches"]):
            plots.add(f"compare:{name}")
    return plots
