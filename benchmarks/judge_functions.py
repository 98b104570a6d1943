"""Where the judge's time goes, function by function: ``harness_overhead.py --runners persistent`` run with this
project's functions clocked in the judge and the CLI (benchmarks/profiled_site, not a sampling profiler: every call
of the package's own functions is timed, those of torch and the rest are part of their callers' own time).

Prints, for the judge of the run's evaluations, its functions with the most time of their own and with the most
time in all, in ms per evaluation, with their calls per evaluation. The clocks cost the judge a few percent
(docs/measurements.md, fourteenth session of 2026-11-27).

    python3 benchmarks/judge_functions.py [--top 30]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
EVALUATE = "flashinfer_bench.bench.judge.main.Judge._evaluate"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fib-functions-") as directory:
        path = os.pathsep.join(p for p in (str(HERE / "profiled_site"), os.environ.get("PYTHONPATH")) if p)
        env = {**os.environ, "PYTHONPATH": path, "FLASHINFER_BENCH_FUNCTION_PROFILE_DIR": directory}
        subprocess.run([sys.executable, str(HERE / "harness_overhead.py"), "--runners", "persistent"], env=env,
                       check=True)
        profiles = [json.loads(p.read_text())["stats"] for p in Path(directory).glob("*.json")]
    judges = [stats for stats in profiles if stats.get(EVALUATE, [0])[0]]
    if not judges:
        raise SystemExit("no judge evaluated anything")
    stats = max(judges, key=lambda s: s[EVALUATE][0])
    evaluations = stats[EVALUATE][0]
    print(f"the judge of {evaluations} evaluations, ms per evaluation (calls per evaluation)")
    for title, column in (("own time", 2), ("time with callees", 1)):
        print(f"  by {title}:")
        for name, (calls, total, own) in sorted(stats.items(), key=lambda i: -i[1][column])[:args.top]:
            print(f"    {own / 1e6 / evaluations:8.2f} own {total / 1e6 / evaluations:8.2f} all "
                  f"({calls / evaluations:7.1f})  {name}")


if __name__ == "__main__":
    main()
