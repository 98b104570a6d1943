"""The routine CLI side by side with FlashInfer's own benchmark: the same test list, the same machine, one run.

Every line of the test list gets a case tag (``--case_tag L<line>``); both CLIs write their CSV; the rows are
matched on (case tag, backend) and the table printed last: each side's median and std, the difference in %, and
whether it is within ``--tolerance-pct`` (3 by default). FlashInfer's benchmark is not part of this project: give
the folder that holds its ``flashinfer_benchmark.py`` and ``launch.py`` (shared/anchors/flashinfer-benchmark on
the developers' machines; copy it into a carried folder of the repository for the GPU machine).

    python3 benchmarks/routine_crosscheck.py --testlist benchmarks/samples/hopper_testlist.txt \\
        --flashinfer-benchmark .anchor/flashinfer-benchmark [--out DIR]

Needs a GPU and FlashInfer (``shared/device/flashinfer-wheel``).
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Match:
    case: str
    routine: str
    backend: str
    theirs_ms: float
    theirs_std_ms: float
    ours_ms: float
    ours_std_ms: float

    @property
    def diff_pct(self) -> float:
        return 100.0 * (self.ours_ms - self.theirs_ms) / self.theirs_ms


def tagged_testlist(testlist: Path, out: Path) -> Path:
    """The test list with ``--case_tag L<line>`` on every case line (comments and blank lines kept)."""
    lines = []
    for number, line in enumerate(testlist.read_text().splitlines(), start=1):
        case = line.split("#", 1)[0].strip()
        lines.append(f"{case} --case_tag L{number}" if case else line)
    tagged = out / "testlist.txt"
    tagged.write_text("\n".join(lines) + "\n")
    return tagged


def read_rows(path: Path) -> dict[tuple[str, str], dict[str, str]]:
    """CSV rows by (case tag, backend); a missing file (nothing ran) has none."""
    if not path.exists():
        return {}
    with path.open(newline="") as handle:
        return {(row["case_tag"], row["backend"]): row for row in csv.DictReader(handle)}


def matches(theirs: dict[tuple[str, str], dict[str, str]],
            ours: dict[tuple[str, str], dict[str, str]]) -> list[Match]:
    """Every (case, backend) both sides timed, in the order of their keys."""
    return [Match(case, row["routine"], backend, float(row["median_time"]), float(row["std_time"]),
                  float(ours[(case, backend)]["median_time"]), float(ours[(case, backend)]["std_time"]))
            for (case, backend), row in sorted(theirs.items(), key=lambda item: (int(item[0][0][1:]), item[0][1]))
            if (case, backend) in ours]


def table(found: list[Match], tolerance_pct: float) -> str:
    header = (f"{'case':5} {'routine':38} {'backend':10} {'flashinfer ms':>13} {'std':>7} {'ours ms':>9} {'std':>7} "
              f"{'diff %':>7}  within {tolerance_pct:g}%")
    rows = [f"{m.case:5} {m.routine:38} {m.backend:10} {m.theirs_ms:13.4f} {m.theirs_std_ms:7.4f} {m.ours_ms:9.4f} "
            f"{m.ours_std_ms:7.4f} {m.diff_pct:7.2f}  {'yes' if abs(m.diff_pct) <= tolerance_pct else 'NO'}"
            for m in found]
    return "\n".join([header, *rows])


def run(command: list[str], log: Path) -> int:
    with log.open("w") as handle:
        return subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT, check=False).returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--testlist", type=Path, default=HERE / "samples" / "hopper_testlist.txt")
    parser.add_argument("--flashinfer-benchmark", type=Path, required=True,
                        help="folder holding FlashInfer's flashinfer_benchmark.py and launch.py")
    parser.add_argument("--out", type=Path, help="folder for the CSVs and logs (default: a temporary one)")
    parser.add_argument("--tolerance-pct", type=float, default=3.0)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="fib-crosscheck-"))
    out.mkdir(parents=True, exist_ok=True)
    testlist = tagged_testlist(args.testlist, out)
    theirs_csv, ours_csv = out / "flashinfer.csv", out / "ours.csv"
    anchor = args.flashinfer_benchmark
    statuses = {
        "flashinfer": run([sys.executable, str(anchor / "launch.py"), str(anchor / "flashinfer_benchmark.py"),
                           "--testlist", str(testlist), "--output_path", str(theirs_csv)], out / "flashinfer.log"),
        "ours": run([sys.executable, str(HERE / "flashinfer_benchmark.py"), "--testlist", str(testlist),
                     "--output_path", str(ours_csv)], out / "ours.log"),
    }
    found = matches(read_rows(theirs_csv), read_rows(ours_csv))
    print(f"exit statuses: {statuses}; logs and CSVs in {out}")
    print(table(found, args.tolerance_pct))


if __name__ == "__main__":
    main()
