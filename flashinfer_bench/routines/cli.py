"""``flashinfer_benchmark.py`` / ``flashinfer-bench routine``: benchmark one case, or every case of a testlist.

Exit status: 0 when every case ran, 1 when a case failed (backend error, refcheck mismatch), 2 for bad input
(including a single case none of whose backends can run here), 130 on Ctrl-C (one line; CSV rows already
written are kept). With ``--testlist FILE`` the other command-line flags are appended to every line (so
``--output_path``, ``--refcheck`` or ``--generate_repro_command`` given there apply to all cases); a failing case
is reported and the next one runs, and a line none of whose backends can run here is skipped, saying so (when
every line is, the status is 2). On a CPU each case is shrunk to finish in seconds (cpu_sizes.py).
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence

from . import log
from .args import parse_case
from .errors import NoBackendError, UsageError
from .runner import Timer, run_case
from .testlist import read_testlist
from .validation import validate

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
#: A testlist line none of whose backends can run here (not an exit status: such a line is skipped).
SKIPPED = -1


def _run_one(argv: Sequence[str], timer: Timer | None, where: str = "", *, in_testlist: bool = False) -> int:
    """Parse, validate and run one case; report any failure as an [ERROR] line and return the exit status (or
    SKIPPED for a testlist line with no backend to run here)."""
    try:
        args = parse_case(argv)
        validate(args)
        return EXIT_OK if run_case(args, argv, timer=timer) else EXIT_FAILED
    except NoBackendError as exc:
        if in_testlist:
            log.warning(f"{where}skipped: {exc}")
            return SKIPPED
        log.error(f"{where}{exc}")
        return EXIT_USAGE
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
    try:
        if known.testlist is None:
            return _run_one(rest, timer)
        return _run_testlist(known.testlist, rest, timer)
    except KeyboardInterrupt:
        log.error("interrupted (Ctrl-C); results already written are kept")
        return EXIT_INTERRUPTED


def _run_testlist(path: str, rest: list[str], timer: Timer | None) -> int:
    try:
        cases = read_testlist(path)
    except UsageError as exc:
        log.error(str(exc))
        return EXIT_USAGE
    statuses = {}
    for number, case in enumerate(cases, 1):
        log.info(f"case {number} of {len(cases)} ({path}:{case.lineno})")
        statuses[case.lineno] = _run_one(case.argv + rest, timer, f"{path}:{case.lineno}: ", in_testlist=True)
    skipped = [line for line, status in statuses.items() if status == SKIPPED]
    failed = [line for line, status in statuses.items() if status not in (EXIT_OK, SKIPPED)]
    if skipped:
        log.warning(f"{len(skipped)} of {len(cases)} test cases skipped: none of their backends can run here "
                    f"(lines {', '.join(map(str, skipped))})")
    if failed:
        log.error(f"{len(failed)} of {len(cases)} test cases failed (lines {', '.join(map(str, failed))})")
        return EXIT_FAILED
    return EXIT_USAGE if cases and len(skipped) == len(cases) else EXIT_OK


def _print_help() -> None:
    from .args import FAMILY_PARSERS, general_parser

    print("usage: flashinfer_benchmark.py --routine ROUTINE [flags] | --testlist FILE [flags]\n")
    general_parser().print_help()
    for family, make in FAMILY_PARSERS.items():
        print(f"\n{family} flags:")
        make().print_help()


if __name__ == "__main__":
    sys.exit(main())
