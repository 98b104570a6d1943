"""Exceptions of the routine benchmark."""


class UsageError(Exception):
    """Bad command-line input (unknown flag, invalid value or combination): exit status 2."""
