"""Suite files loaded as modules, for unit tests of their helpers (suites/ is not a package: pytest collects its
files by path)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def load(relative: str) -> ModuleType:
    """``relative`` (e.g. ``suites/storage/conftest.py``) executed as a module of its own, registered under a name
    made from its path (a dataclass in it resolves its annotations through ``sys.modules``)."""
    path = ROOT / relative
    name = "_suite_" + re.sub(r"\W", "_", relative.removesuffix(".py"))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
