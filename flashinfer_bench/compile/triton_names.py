"""A static check of Triton sources: every ``tl.<name>`` must exist in ``triton.language``.

Triton reports a misspelt or missing language function only when the kernel is first compiled, at its first
launch; under the CPU interpreter it is a plain AttributeError at run time. Checking the names at build time
makes such a solution a COMPILE_ERROR on every device alike.
"""

from __future__ import annotations

import ast

LANGUAGE_MODULE = "triton.language"


def _language_aliases(tree: ast.Module) -> set[str]:
    aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases.update(a.asname for a in node.names if a.name == LANGUAGE_MODULE and a.asname)
        elif isinstance(node, ast.ImportFrom) and node.module == "triton":
            aliases.update(a.asname or a.name for a in node.names if a.name == "language")
    return aliases


def undefined_language_names(path: str, source: str, language: object) -> list[str]:
    """``path:line: tl.name`` for each attribute of a triton.language alias that ``language`` lacks."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []  # the import that follows reports it, with the interpreter's own message
    aliases = _language_aliases(tree)
    return [
        f"{path}:{node.lineno}: {node.value.id}.{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
        and not hasattr(language, node.attr)
    ]
