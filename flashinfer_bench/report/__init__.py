"""Reports over stored results: what a run holds (sources, results), the numbers people compare (metrics, noise,
compare), and the self-contained HTML page (payload, html). The terminal rendering is in ``cli/report.py``."""
