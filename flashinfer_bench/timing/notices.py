"""User-facing warnings of the timing layer.

Everything goes through the ``logging`` logger ``flashinfer_bench.timing`` at WARNING level (with no
handler configured, Python prints it to stderr). Conditions of a single measurement are also kept in
``TimingResult.warnings``; process-wide conditions (a missing optional package) are logged once.
"""

from __future__ import annotations

import logging

LOGGER_NAME = "flashinfer_bench.timing"
logger = logging.getLogger(LOGGER_NAME)

_already_logged: set[str] = set()


def warn(message: str, collected: list[str] | None = None) -> None:
    """Log ``message`` and append it to ``collected`` (a result's warnings) when given."""
    logger.warning(message)
    if collected is not None:
        collected.append(message)


def warn_once(message: str, collected: list[str] | None = None) -> None:
    """Log ``message`` the first time this process sees it; always append it to ``collected``."""
    if message not in _already_logged:
        _already_logged.add(message)
        logger.warning(message)
    if collected is not None:
        collected.append(message)
