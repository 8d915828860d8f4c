"""The core imports, before any loop runs, every module a session imports while its loop runs."""

from __future__ import annotations

import ast
import inspect
import textwrap

from app.core.server import PRELOADED_MODULES
from app.pipeline import Pipeline


def _imported_modules(fn) -> set[str]:
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    return {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}


def test_every_module_opening_the_stream_imports_is_preloaded():
    """`Pipeline.open_stream` runs while the loop runs: an import there would hold the interpreter
    lock for tens of milliseconds. A new import in it must be added to `PRELOADED_MODULES`."""
    imported = _imported_modules(Pipeline.open_stream)
    assert imported, "open_stream imports its modules lazily (the check reads them)"
    assert imported <= set(PRELOADED_MODULES), sorted(imported - set(PRELOADED_MODULES))
