#!/usr/bin/env python3
"""Copy a wincon run's finished.json metadata to Prow's $ARTIFACTS/metadata.json.

Prow's sidecar merges artifacts/metadata.json into the finished.json it writes, which is how the
Kubernetes version, Windows builds, CNI and runtime reach TestGrid's column headers for Prow jobs.
TestGrid takes string values (or maps of strings), so anything else is turned into a string.

    python3 ci/scripts/prow_metadata.py RESULTS/finished.json "$ARTIFACTS/metadata.json"
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def flatten(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): v if isinstance(v, str) else json.dumps(v, sort_keys=True) for k, v in value.items()}
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: prow_metadata.py RESULTS/finished.json OUT/metadata.json", file=sys.stderr)
        return 4
    source, target = Path(argv[0]), Path(argv[1])
    try:
        metadata = json.loads(source.read_text()).get("metadata") or {}
    except (OSError, ValueError, AttributeError) as exc:
        print(f"prow_metadata.py: error: {source} has no readable metadata: {exc}", file=sys.stderr)
        return 8
    existing: dict[str, Any] = {}
    if target.exists():
        try:
            existing = json.loads(target.read_text())
        except ValueError:
            existing = {}
    existing.update({str(k): flatten(v) for k, v in metadata.items()})
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(existing, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
