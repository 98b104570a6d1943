"""The HTML report: one self-contained file (inline CSS, data and script; no network needed to open it)."""

from __future__ import annotations

import html
import json
from importlib import resources
from pathlib import Path
from typing import Any

ASSETS = resources.files("flashinfer_bench.report") / "assets"

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
{css}
</style>
<script>
{errors_js}
</script>
</head>
<body>
<main id="report">
<div id="fib-errors"></div>
<noscript>This report draws its tables and plots with JavaScript; allow scripts for this file.</noscript>
</main>
<div id="fib-selfcheck" hidden data-status="pending" data-plots="0"></div>
<script type="application/json" id="fib-data">{data}</script>
<script>
(function () {{
  "use strict";
{draw_js}
{report_js}
}})();
</script>
</body>
</html>
"""


def embedded_json(payload: Any) -> str:
    """JSON that cannot end the <script> element holding it: '<', '>' and '&' are written as escapes, which
    JSON.parse reads back unchanged."""
    text = json.dumps(payload, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_page(payload: dict[str, Any]) -> str:
    return _PAGE.format(
        title=html.escape(str(payload.get("title", "report"))),
        css=(ASSETS / "report.css").read_text(encoding="utf-8"),
        errors_js=(ASSETS / "errors.js").read_text(encoding="utf-8"),
        data=embedded_json(payload),
        draw_js=(ASSETS / "draw.js").read_text(encoding="utf-8"),
        report_js=(ASSETS / "report.js").read_text(encoding="utf-8"),
    )


def write_page(payload: dict[str, Any], path: str | Path) -> Path:
    """Write the page to ``path`` (its folder is made if missing) and return the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_page(payload), encoding="utf-8")
    return target
