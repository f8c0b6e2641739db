"""Render the YAML templates in manifests/ with parameters."""

from __future__ import annotations

import string
from pathlib import Path
from typing import Any

import yaml

from wincon.commandline.errors import UsageError

MANIFESTS = Path(__file__).resolve().parents[2] / "manifests"


def render(template: str | Path, **params: Any) -> list[dict[str, Any]]:
    """The documents of ``template`` (a path, or a name under manifests/) with ``$name`` replaced.

    Every placeholder must be given: a missing one is an error, not an empty string in a manifest.
    """
    path = Path(template)
    if not path.is_absolute() and not path.exists():
        path = MANIFESTS / path
    try:
        text = path.read_text()
    except OSError as exc:
        raise UsageError(f"manifest template {path} cannot be read: {exc}", "check the template name") from exc
    try:
        rendered = string.Template(text).substitute({k: str(v) for k, v in params.items()})
    except KeyError as exc:
        raise UsageError(f"manifest template {path} needs parameter {exc.args[0]!r}", "pass it to render()") from exc
    return [doc for doc in yaml.safe_load_all(rendered) if doc]
