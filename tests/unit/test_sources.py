"""docs/sources.md and the documents(source, section) marker: every citation resolves, lint catches the rest."""

import pytest

from tests.unit.test_lint import U1, row
from wincon.commandline.commands import lint_problems
from wincon.documents import sources

TABLE = """
| id | seed file | title | version or date | public URL |
|---|---|---|---|---|
| guide | 002_8a7e76f95009f44f.txt | A guide | v1.14 | https://example.org/guide |
| spec |  | A spec | main | https://example.org/spec |

after the table
"""


def test_the_sources_table_is_read_row_by_row():
    parsed = sources.parse(TABLE)
    assert list(parsed) == ["guide", "spec"]
    assert parsed["guide"].seed == "002_8a7e76f95009f44f.txt" and parsed["spec"].seed == ""
    assert parsed["spec"].url == "https://example.org/spec"


@pytest.mark.parametrize(
    "text, error",
    [("no table here", "no sources table"), (TABLE.replace("| spec |", "| guide |"), "defined twice")],
)
def test_a_broken_sources_table_is_an_error(text, error):
    with pytest.raises(ValueError, match=error):
        sources.parse(text)


def test_every_source_of_docs_sources_md_has_a_title_a_version_and_a_public_url():
    for source in sources.load().values():
        assert source.title and source.version, source
        assert source.url.startswith("https://"), source


def test_lint_requires_a_documents_marker_with_a_known_source_and_a_section():
    known = sources.parse(TABLE)
    good = row("a::t1", [U1]) | {"documents": [["guide", "Networking"]]}
    assert lint_problems([good], {}, known) == []
    problems = "\n".join(
        lint_problems(
            [
                row("a::t2", [U1]) | {"documents": []},
                row("a::t3", [U1]) | {"documents": [["nowhere", "x"], ["spec", " "]]},
            ],
            {},
            known,
        )
    )
    assert "a::t2: no documents marker" in problems
    assert "documents source 'nowhere' is not in docs/sources.md" in problems
    assert "a::t3: documents('spec') names no section" in problems


def test_a_tests_doc_property_comes_from_its_documents_markers(pytester):
    pytester.makepyfile(
        test_s="""
        import pytest

        @pytest.mark.documents("k8s-windows-guide", "Networking")
        @pytest.mark.documents("windows-operational-readiness", "Core.Network")
        def test_x():
            '''Cites 000_4130a90def37a825.txt in prose only: prose is not a citation.'''
        """
    )
    (item,), _ = pytester.inline_genitems(str(pytester.path / "test_s.py"))
    assert sources.citations(item) == [
        ("k8s-windows-guide", "Networking"),
        ("windows-operational-readiness", "Core.Network"),
    ]
    assert sources.cited_seeds(item) == ["002_8a7e76f95009f44f.txt"]
