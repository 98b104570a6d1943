"""Exceptions of the routine benchmark."""


class UsageError(Exception):
    """Bad command-line input (unknown flag, invalid value or combination): exit status 2."""


class NoBackendError(UsageError):
    """None of the backends a case asks for can run on this machine: exit status 2 for a single case; a line of
    a testlist is skipped instead."""
