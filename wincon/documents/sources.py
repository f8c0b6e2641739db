"""The documents tests cite (``docs/sources.md``), and the ``documents(source, section)`` marker.

A test names what it checks with ``@pytest.mark.documents("k8s-windows-guide", "Supported Functionality >
Services")``; the source id resolves to a title, a version or date and a public URL in ``docs/sources.md``,
so a citation means something to a reader who never saw the seed files.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

SOURCES_MD = Path(__file__).resolve().parents[2] / "docs" / "sources.md"
HEADER = "| id | seed file | title | version or date | public URL |"


@dataclass(frozen=True)
class Source:
    id: str
    seed: str  # the seed file name, where the source is one of the seeds ('' otherwise)
    title: str
    version: str
    url: str


def parse(text: str) -> dict[str, Source]:
    """The sources table of a ``docs/sources.md`` text: id -> Source. ValueError if there is none."""
    lines = text.splitlines()
    try:
        start = lines.index(HEADER)
    except ValueError:
        raise ValueError(f"no sources table (header {HEADER!r})") from None
    sources: dict[str, Source] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or not cells[0]:
            raise ValueError(f"malformed sources row: {line!r}")
        source = Source(*cells)
        if source.id in sources:
            raise ValueError(f"source {source.id!r} is defined twice")
        sources[source.id] = source
    return sources


@cache
def load(path: Path = SOURCES_MD) -> dict[str, Source]:
    return parse(path.read_text())


def citations(item: Any) -> list[tuple[str, str]]:
    """The (source, section) pairs of a collected test's ``documents`` markers, in marker order."""
    found = []
    for marker in reversed(list(item.iter_markers("documents"))):
        args = [str(a) for a in marker.args] + ["", ""]
        found.append((args[0], args[1]))
    return found


def cited_seeds(item: Any) -> list[str]:
    """The seed files of the sources a test cites (a result's ``doc`` property), sorted."""
    known = load()
    return sorted({known[source].seed for source, _ in citations(item) if source in known and known[source].seed})
