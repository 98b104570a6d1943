"""``flashinfer_benchmark.py`` / ``flashinfer-bench routine``: benchmark one case, or every case of a testlist.

Exit status: 0 when every case ran, 1 when a case failed (backend error, refcheck mismatch), 2 for bad input.
With ``--testlist FILE`` the other command-line flags are appended to every line (so ``--output_path``,
``--refcheck`` or ``--generate_repro_command`` given there apply to all cases); a failing case is reported and
the next one runs.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence

from . import log
from .args import parse_case
from .errors import UsageError
from .runner import Timer, run_case
from .testlist import read_testlist
from .validation import validate

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _run_one(argv: Sequence[str], timer: Timer | None, where: str = "") -> int:
    """Parse, validate and run one case; report any failure as an [ERROR] line and return the exit status."""
    try:
        args = parse_case(argv)
        validate(args)
        return EXIT_OK if run_case(args, argv, timer=timer) else EXIT_FAILED
    except UsageError as exc:
        log.error(f"{where}{exc}")
        return EXIT_USAGE
    except Exception as exc:  # noqa: BLE001 - a broken case is a result; a testlist goes on with the next one
        log.error(f"{where}{type(exc).__name__}: {exc}")
        traceback.print_exc()
        return EXIT_FAILED


def main(argv: list[str] | None = None, *, timer: Timer | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    pre.add_argument("--testlist", default=None)
    pre.add_argument("-h", "--help", action="store_true")
    known, rest = pre.parse_known_args(argv)
    if known.help:
        _print_help()
        return EXIT_OK
    if known.testlist is None:
        return _run_one(rest, timer)
    try:
        cases = read_testlist(known.testlist)
    except UsageError as exc:
        log.error(str(exc))
        return EXIT_USAGE
    failed = [c.lineno for c in cases if _run_one(c.argv + rest, timer, f"{known.testlist}:{c.lineno}: ") != EXIT_OK]
    if failed:
        log.error(f"{len(failed)} of {len(cases)} test cases failed (lines {', '.join(map(str, failed))})")
        return EXIT_FAILED
    return EXIT_OK


def _print_help() -> None:
    from .args import FAMILY_PARSERS, general_parser

    print("usage: flashinfer_benchmark.py --routine ROUTINE [flags] | --testlist FILE [flags]\n")
    general_parser().print_help()
    for family, make in FAMILY_PARSERS.items():
        print(f"\n{family} flags:")
        make().print_help()


if __name__ == "__main__":
    sys.exit(main())
