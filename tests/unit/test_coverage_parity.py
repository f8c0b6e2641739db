"""docs/coverage.md "Upstream parity" stays in step with upstream and with the suites.

Upstream, per version (wincon.documents.upstream, data docs/upstream-parity.yaml): every test of k8s.io/kubernetes
test/e2e/windows, and every test elsewhere in test/e2e whose Ginkgo name names Windows, at each version the
data file lists (and its baseline), read from that version's module tree, has an entry; every entry names
wincon test ids that exist or says why it is not checked yet; a test whose own code changed since the previous
version has a note saying what changed; and the generated tables in docs/coverage.md are what
`wincon coverage --write` writes. A module missing from the Go module cache is downloaded (`go mod
download`, no build); where that cannot be done the test fails saying why, it never skips.

The hand-kept rows (operational readiness, files of older versions): every test id exists and belongs to the
function named beside it; every operational-readiness category is listed; a row without a test says why; a
row with a test says how it differs; a suite test whose docstring cites an upstream file (``upstream
<file>.go``) is in that file's rows or entries. Read with ``ast``: no collection, no cluster.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from wincon.documents import upstream
from wincon.documents.upstream import E2E, UpstreamTest, module_dir, normalise, upstream_tests
from wincon.localcluster import build, paths

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "coverage.md"
SUITES = ROOT / "suites"
VERSIONS = ROOT / "wincon" / "localcluster" / "versions.toml"
HEADING = "## Upstream parity"

# kubernetes-sigs/windows-operational-readiness specifications/*/spec.yaml categories.
READINESS_CATEGORIES = (
    "Core.Network",
    "Core.Scheduling",
    "Core.Storage",
    "Core.Concurrent",
    "Extend.ActiveDirectory",
    "Extend.HostProcess",
    "Extend.NetworkPolicy",
    "Extend.Network",
    "Extend.Worker",
)

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
PAIR = re.compile(rf"`({UUID})`\s+`([^`:]+)::(test_\w+)`")
CITATION = re.compile(r"upstream\s+([a-z_]+\.go)")
LOCATION = re.compile(r"^([a-z_]+\.go):(\d+)$")
DIFFERENCE = re.compile(r"^(same\b|stricter: \S|weaker: \S)")


@dataclass(frozen=True)
class SuiteTest:
    test_id: str
    path: str  # relative to suites/
    function: str
    doc: str


def suite_tests(suites: Path = SUITES) -> dict[str, SuiteTest]:
    """Every test function of the suites with a test_id marker, by id."""
    found: dict[str, SuiteTest] = {}
    for path in sorted(suites.rglob("test_*.py")):
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, ast.FunctionDef):
                continue
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and getattr(decorator.func, "attr", "") == "test_id":
                    test_id = decorator.args[0].value
                    rel = path.relative_to(suites).as_posix()
                    found[test_id] = SuiteTest(test_id, rel, node.name, ast.get_docstring(node) or "")
    return found


def parity_rows(markdown: str) -> list[list[str]]:
    """The table rows of the "Upstream parity" section (header and separator rows left out)."""
    if HEADING not in markdown.splitlines():
        return []
    section = markdown.split(HEADING + "\n", 1)[1]
    section = re.split(r"^## ", section, maxsplit=1, flags=re.MULTILINE)[0]
    if upstream.BEGIN in section and upstream.END in section:  # the generated tables: checked apart
        head, _, rest = section.partition(upstream.BEGIN)
        section = head + rest.partition(upstream.END)[2]
    rows = []
    for line in section.splitlines():
        if not line.startswith("|") or set(line) <= set("|- "):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0].startswith(("upstream file", "category")):
            continue
        rows.append(cells)
    return rows


def source_file(cell: str) -> str:
    """``security_context.go:204`` -> ``security_context.go``; a category or a bare file name as it is."""
    return cell.split(":", 1)[0] if LOCATION.match(cell) else cell


def parity_problems(
    markdown: str, tests: dict[str, SuiteTest], entries: dict[str, set[str]] | None = None
) -> list[str]:
    """Problems of the hand-kept rows; ``entries``: upstream file name -> the ids the data file maps its
    tests to (a suite test citing that file may be there instead)."""
    rows = parity_rows(markdown)
    if not rows:
        return [f"no {HEADING!r} section with table rows"]
    problems = []
    cited_in: dict[str, set[str]] = {name: set(ids) for name, ids in (entries or {}).items()}
    for cells in rows:
        if len(cells) != 4:
            problems.append(f"row {cells[:2]}: {len(cells)} cells, expected 4")
            continue
        source, _, wincon, note = cells
        pairs = PAIR.findall(wincon)
        if wincon == "none":
            if not note:
                problems.append(f"row {source} {cells[1][:40]!r}: no test and no reason")
            continue
        if not pairs:
            problems.append(f"row {source} {cells[1][:40]!r}: neither `id` `path::function` nor 'none'")
        if not DIFFERENCE.match(note):
            problems.append(
                f"row {source} {cells[1][:40]!r}: difference {note[:30]!r} is not 'same', 'stricter: ...' "
                "or 'weaker: ...'"
            )
        for test_id, path, function in pairs:
            test = tests.get(test_id)
            if test is None:
                problems.append(f"row {source}: test id {test_id} is in no suite")
            elif (test.path, test.function) != (path, function):
                problems.append(
                    f"row {source}: test id {test_id} is {test.path}::{test.function}, not {path}::{function}"
                )
            cited_in.setdefault(source_file(source), set()).add(test_id)
    sources = {cells[0] for cells in rows}
    for name in READINESS_CATEGORIES:
        if name not in sources:
            problems.append(f"{name} has no row")
    for test in tests.values():
        for cited in sorted(set(CITATION.findall(test.doc))):
            if test.test_id not in cited_in.get(cited, set()):
                problems.append(f"{test.path}::{test.function} cites upstream {cited} but is in none of its rows")
    return problems


# ----------------------------------------------------------------------------- the checkers themselves can fail

TEST = SuiteTest("11111111-2222-4333-8444-555555555555", "node/test_a.py", "test_a", "as upstream density.go does")
HEADER = "| upstream file:line | upstream test | wincon test (id, path) | difference |\n|---|---|---|---|\n"
ROW = f"| density.go:69 | Density | `{TEST.test_id}` `node/test_a.py::test_a` | same |"


def doc_with(*rows: str) -> str:
    listed = "".join(f"| {name} | x | none | not ported |\n" for name in READINESS_CATEGORIES)
    return f"# Coverage\n\n{HEADING}\n\n{HEADER}" + "".join(r + "\n" for r in rows) + listed + "\n## Other\n"


def test_checker_accepts_a_row_naming_the_test_by_id_and_path():
    assert parity_problems(doc_with(ROW), {TEST.test_id: TEST}) == []


def test_checker_reports_an_unknown_id_and_a_renamed_function():
    unknown = "| density.go:69 | Density | `99999999-2222-4333-8444-555555555555` `node/test_a.py::test_a` | same |"
    renamed = f"| density.go:69 | Density | `{TEST.test_id}` `node/test_a.py::test_old_name` | same |"
    problems = parity_problems(doc_with(unknown, renamed), {TEST.test_id: TEST})
    assert any("is in no suite" in p for p in problems), problems
    assert any("not node/test_a.py::test_old_name" in p for p in problems), problems


def test_checker_reports_a_missing_category_a_bare_none_a_blank_difference_and_an_uncited_test():
    text = doc_with("| hyperv.go:47 | HyperV | none | |", ROW.replace("| same |", "|  |"))
    text = text.replace("| Core.Storage | x | none | not ported |\n", "")
    problems = parity_problems(text.replace("density.go:69", "dns.go:43"), {TEST.test_id: TEST})
    assert "Core.Storage has no row" in problems, problems
    assert any("no test and no reason" in p for p in problems), problems
    assert any("difference '' is not" in p for p in problems), problems
    assert any("cites upstream density.go but is in none of its rows" in p for p in problems), problems


def test_checker_reads_only_its_own_section():
    text = doc_with().replace(HEADING, "## Generated") + f"\n{HEADING}\n"
    assert parity_problems(text, {}) == [f"no {HEADING!r} section with table rows"]


# ----------------------------------------------------------------------------- the generated tables, per version

DATA = upstream.load_data()


def known_ids() -> dict[str, str]:
    return {test.test_id: f"{test.path}::{test.function}" for test in suite_tests().values()}


def entry_ids(data: upstream.ParityData = DATA) -> dict[str, set[str]]:
    """Upstream file name (windows/cpu_limits.go -> cpu_limits.go) -> the ids its entries map to."""
    found: dict[str, set[str]] = {}
    for entry in data.entries:
        found.setdefault(Path(entry.file).name, set()).update(entry.wincon)
    return found


@pytest.fixture(scope="module")
def generated() -> tuple[str, list[str]]:
    try:
        return upstream.tables(DATA, known_ids())
    except upstream.ModuleUnavailable as error:
        pytest.fail(f"the upstream tables need each version's module tree: {error}")


def test_the_hand_kept_rows_match_the_suites():
    problems = parity_problems(DOC.read_text(), suite_tests(), entry_ids())
    assert not problems, "docs/coverage.md Upstream parity is out of step:\n" + "\n".join(problems)


def test_every_upstream_windows_test_of_every_version_has_an_entry_naming_existing_tests(generated):
    _, problems = generated
    assert not problems, "docs/upstream-parity.yaml against the module trees:\n" + "\n".join(problems)


def test_docs_coverage_md_holds_the_generated_tables(generated):
    part, _ = generated
    assert part in DOC.read_text(), "docs/coverage.md's upstream tables are stale: run `wincon coverage --write`"
    for version in DATA.versions:
        assert f"### Kubernetes {version}\n" in part


def test_the_tables_are_the_releases_versions_toml_builds(tmp_path):
    assert DATA.versions == upstream.release_versions(VERSIONS)
    assert DATA.baseline not in DATA.versions
    toml = tmp_path / "versions.toml"
    toml.write_text(
        '[kubernetes]\nmodule = "k8s.io/kubernetes"\n[releases."1.9"]\nversion = "v1.9.1"\n'
        '[releases."1.10"]\nversion = "v1.10.0-beta.0"\ncoredns = "v1.12.4"\n'
    )
    assert upstream.release_versions(toml) == ["v1.9.1", "v1.10.0-beta.0"]


def test_every_entry_says_how_ours_differs_or_why_it_is_not_checked():
    bad = []
    for entry in DATA.entries:
        notes = [entry.ours, *entry.ours_from.values()] if entry.wincon else []
        if entry.wincon and not all(DIFFERENCE.match(note) for note in notes):
            bad.append(f"{entry.file} {entry.title!r}: ours {notes!r}")
        if not entry.wincon and not entry.not_checked:
            bad.append(f"{entry.file} {entry.title!r}: no wincon test and no reason")
        for version in [*entry.ours_from, *entry.changes]:
            if version not in DATA.versions:
                bad.append(f"{entry.file} {entry.title!r}: {version} is not a version of the tables")
    assert not bad, "\n".join(bad)


def test_the_guard_fails_when_an_entry_is_missing_a_note_is_missing_or_an_id_is_unknown(generated):
    assert not generated[1]
    service = next(e for e in DATA.entries if e.file == "windows/service.go")
    stats = next(e for e in DATA.entries if "up to 10 pods" in e.title)
    data = upstream.ParityData(DATA.baseline, DATA.versions, [e for e in DATA.entries if e is not stats])
    service.changes, kept = {}, service.changes
    service.wincon, ids = [*service.wincon, "99999999-2222-4333-8444-555555555555"], service.wincon
    try:
        _, problems = upstream.tables(data, known_ids())
    finally:
        service.changes, service.wincon = kept, ids
    text = "\n".join(problems)
    assert "windows/kubelet_stats.go:50 " in text and "has no entry" in text, text
    assert "windows/service.go:52: its code changed since v1.35.4" in text, text
    assert "99999999-2222-4333-8444-555555555555 is no collected test" in text, text


def test_the_1_35_reboot_skip_and_the_1_37_rename_are_recorded(generated):
    part, _ = generated
    v135 = part.split("### Kubernetes v1.35.4")[1].split("### Kubernetes")[0]
    reboot = next(line for line in v135.splitlines() if line.startswith("| windows/reboot_node.go:"))
    assert 'upstream now always skips it: e2eskipper.Skipf("skipping test until graceful shutdown' in reboot
    assert "[MinimumKubeletVersion:1.22]" in reboot.split(" | ")[-1]  # the rename, from the old title
    v137 = part.split("### Kubernetes v1.37.2")[1].split("### Kubernetes")[0]
    stats = next(line for line in v137.splitlines() if "when running up to 10 pods" in line)
    assert "renamed: at v1.36.3" in stats and "when running 10 pods" in stats.split(" | ")[-1]
    assert "| windows/subpath_cleanup.go:44 |" in v137 and "new in v1.37.2" in v137
    # 38 Its of test/e2e/windows in 17 files plus node/kubelet.go's three Windows Its; 1.37 adds subpath_cleanup.go
    assert "41 tests in 18 files, 4 groups" in v135 and "42 tests in 19 files, 5 groups" in v137


# ----------------------------------------------------------------------------- the reader, on fixture snippets

GO = """package windows

var sigDescribe = framework.SIGDescribe("windows")

var _ = sigDescribe(feature.Windows, "Density", framework.WithSerial(), skipUnlessWindows(func() {
	ginkgo.Context("create a batch", func() {
		for _, arg := range tests {
			desc := fmt.Sprintf("when create %d pods with %v interval", arg.n, arg.i)
			ginkgo.It(desc, func(ctx context.Context) {
				run(`ginkgo.It("not a test")`) // ginkgo.It("nor this")
			})
		}
	})
	ginkgo.It("outside the context", ginkgo.Label("x"), func(ctx context.Context) {
		e2eskipper.Skipf("until the feature is enabled")
		if x {
			e2eskipper.Skipf("only sometimes")
		}
	})
	f.It("labelled", feature.NetworkingIPv4, func(ctx context.Context) {
		if x {
			e2eskipper.Skipf("only sometimes")
		}
	})
}))

var _ = sigDescribe("Second", func() {
	ginkgo.DescribeTable("table", func(n int) {},
		ginkgo.Entry("first entry", 1),
	)
})
"""
FEATURE_GO = """package feature

var (
	NetworkingIPv4 = framework.WithFeature(framework.ValidFeatures.Add("Networking-IPv4"))
	Windows = framework.WithFeature(framework.ValidFeatures.Add("Windows"))
	NodeLogQuery = framework.WithFeature(framework.ValidFeatures.Add("NodeLogQuery"))
)
"""
UTIL_GO = 'package framework\n\nvar (\n\tProvidersWithSSH = []string{"gce", "aws"}\n)\n'
NODE_GO = """package node

var SIGDescribe = framework.SIGDescribe("node")

var _ = SIGDescribe("kubelet", func() {
	f.Describe("log query", feature.NodeLogQuery, func() {
		ginkgo.It("should return the kubelet logs", func(ctx context.Context) {})
		f.It("should return the Microsoft-Windows-Security-SPP logs", f.WithProvider(framework.ProvidersWithSSH...), func(ctx context.Context) {
			query(ctx)
		})
		f.It("should return " + "nothing", cannotRead(), func(ctx context.Context) {})
	})
})

var _ = SIGDescribe("Pod Level Resources", framework.WithSerial(), func() {
	ginkgo.BeforeEach(func(ctx context.Context) {
		if framework.NodeOSDistroIs("windows") {
			e2eskipper.Skipf("not supported on windows -- skipping")
		}
	})
	ginkgo.It("a", func() {})
	ginkgo.It("b", func() {})
})
"""


def tree(tmp_path: Path) -> Path:
    for rel, text in [
        ("windows/density.go", GO),
        ("feature/feature.go", FEATURE_GO),
        ("framework/util.go", UTIL_GO),
        ("node/kubelet.go", NODE_GO),
    ]:
        path = tmp_path / E2E / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_reader_names_each_test_as_ginkgo_does(tmp_path):
    found = upstream_tests(tree(tmp_path))
    head = "[sig-windows] [Feature:Windows] Density [Serial]"
    assert found == [
        UpstreamTest(
            "node/kubelet.go",
            8,
            "[sig-node] kubelet log query [Feature:NodeLogQuery] should return the Microsoft-Windows-Security-SPP logs [Provider:gce,aws]",
        ),
        UpstreamTest("windows/density.go", 9, f"{head} create a batch when create %d pods with %v interval"),
        UpstreamTest("windows/density.go", 14, f"{head} outside the context"),
        UpstreamTest("windows/density.go", 20, f"{head} labelled [Feature:Networking-IPv4]"),
        UpstreamTest("windows/density.go", 29, "[sig-windows] Second table first entry"),
    ]
    assert found[1].matches(f"{head} create a batch when create 10 pods with 0s interval")
    assert not found[1].matches(f"{head} create a batch when create 10 pods")
    assert [t.skip for t in found] == ["", "", 'e2eskipper.Skipf("until the feature is enabled") at line 15', "", ""]
    assert module_dir("v1.34.4", Path("/m"), "github.com/Microsoft/x") == Path("/m/github.com/!microsoft/x@v1.34.4")


def test_reader_refuses_a_selected_name_it_cannot_read(tmp_path):
    root = tree(tmp_path)
    (root / E2E / "node/kubelet.go").write_text(NODE_GO.replace('"should return " + "nothing"', '"Windows " + name'))
    with pytest.raises(upstream.UpstreamParseError, match="cannot read argument"):
        upstream_tests(root)


def test_a_group_counts_its_tests_and_finds_its_windows_skip(tmp_path):
    root = tree(tmp_path)
    found = upstream.group(root, "node/kubelet.go", "Pod Level Resources")
    assert found is not None and (found.line, found.group) == (15, 2)
    assert found.title == "[sig-node] Pod Level Resources [Serial]"
    assert found.windows_skip == 'e2eskipper.Skipf at line 18, under NodeOSDistroIs("windows") at line 17'
    assert upstream.group(root, "node/kubelet.go", "kubelet").windows_skip == ""
    assert upstream.group(root, "node/missing.go", None) is None


def test_compare_records_renames_skips_and_changed_code():
    entry = upstream.Entry("windows/a.go", "A new", ["A old"], ["id"], "", "same", {}, {"v2": "the target moved"})
    data = upstream.ParityData("v0", ["v1", "v2"], [entry])
    before = [UpstreamTest("windows/a.go", 5, "[sig-windows] A old [MinimumKubeletVersion:1.22]", "b1", "")]
    after = [UpstreamTest("windows/a.go", 6, "[sig-windows] A new", "b2", "Skipf at line 7")]
    rows, gone, problems = upstream.compare("v2", after, "v1", before, data)
    assert gone == [] and problems == []
    assert rows[0].change == (
        "renamed: at v1 '[sig-windows] A old [MinimumKubeletVersion:1.22]'; upstream now always skips it: "
        "Skipf at line 7; code changed: the target moved"
    )
    rows, _, problems = upstream.compare("v1", after, "v0", before, data)  # no note for v1
    assert problems == [
        "v1 windows/a.go:6: its code changed since v0 and upstream-parity.yaml has no changes[v1] for it"
    ]
    stranger = [UpstreamTest("windows/b.go", 1, "B", "x", "")]
    rows, gone, problems = upstream.compare("v2", stranger, "v1", before, data)
    assert rows[0].change == "new in v2 (not in v1)" and gone == before
    assert problems == ["v2 windows/b.go:1 'B' has no entry in upstream-parity.yaml"]
    assert normalise("[sig-windows] [Feature:Windows]  A  [Serial] b") == "A b"


def test_a_module_that_cannot_be_had_fails_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(upstream.shutil, "which", lambda name: None)
    with pytest.raises(upstream.ModuleUnavailable, match="no `go` command to download it"):
        upstream.ensure_module("v1.99.0", tmp_path)
    fake = tmp_path / "go"
    fake.write_text("#!/bin/sh\necho 'proxy unreachable' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(upstream.shutil, "which", lambda name: str(fake))
    with pytest.raises(
        upstream.ModuleUnavailable,
        match=r"go mod download k8s.io/kubernetes@v1.99.0. failed \(exit 1\): proxy unreachable",
    ):
        upstream.ensure_module("v1.99.0", tmp_path / "mod")


def test_a_key_given_twice_in_the_parity_data_is_an_error():
    """Plain YAML keeps the second of two keys silently: a stale second ``ours_from`` once hid the current note."""
    twice = "- file: a.go\n  ours_from:\n    v1.37.2: new\n  ours_from:\n    v1.37.2: old\n"
    assert yaml.safe_load(twice)[0]["ours_from"] == {"v1.37.2": "old"}  # what plain YAML did
    with pytest.raises(yaml.constructor.ConstructorError, match="'ours_from' given twice"):
        upstream.load_yaml_unique(twice)
    assert upstream.load_yaml_unique("- file: a.go\n  ours: x\n") == [{"file": "a.go", "ours": "x"}]


# ----------------------------------------------------------------------------- the download path's toolchain
# The real download of each release's module into an empty module cache (69 s for the four on 2 cores, most of it
# the toolchain and removing the extracted trees): tests/integration/test_module_download.py.


def fake_go(tmp_path: Path, version: str) -> Path:
    """A go command that is ``version`` (``go env GOVERSION``) and, for ``go mod download``, records the
    GOTOOLCHAIN it was given and extracts the module as the real one does (a test/e2e/windows directory)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    go = tmp_path / "go"
    go.write_text(
        "#!/bin/sh\n"
        f'if [ "$1 $2" = "env GOVERSION" ]; then echo {version}; exit 0; fi\n'
        'echo "${GOTOOLCHAIN:-unset}" >> "$GOMODCACHE/../toolchains"\n'
        'mkdir -p "$GOMODCACHE/k8s.io/kubernetes@${4#*@}/test/e2e/windows"\n'
        'echo "{}"\n'
    )
    go.chmod(0o755)
    return go


def test_a_release_s_toolchain_is_set_only_where_the_machine_s_go_is_older(tmp_path):
    """versions.toml's go_toolchain (1.38: go1.27.3) becomes GOTOOLCHAIN for a machine whose go is older; a
    machine whose go is as new or newer runs its own; a release without one never sets it."""
    versions = {release: paths.load_versions(release) for release in paths.releases()}
    toolchains = {
        r: v["kubernetes"]["go_toolchain"] for r, v in versions.items() if v["kubernetes"].get("go_toolchain")
    }
    assert toolchains == {"1.38": "go1.27.3"}
    old, same, new = (fake_go(tmp_path / name, version) for name, version in [
        ("old", "go1.26.8"), ("same", "go1.27.3"), ("new", "go1.28rc1")
    ])  # fmt: skip
    for release, release_versions in versions.items():
        expected = {"GOTOOLCHAIN": toolchains[release]} if release in toolchains else {}
        assert paths.go_environment(release_versions, str(old)) == expected, release
        assert paths.go_environment(release_versions, str(same)) == {}, release
        assert paths.go_environment(release_versions, str(new)) == {}, release
        assert build.go_environment(release_versions, str(old)) == expected  # the build asks the same function
    assert paths.go_version_key("go1.27.3") == (1, 27, 3) and paths.go_version_key("go1.28rc1") == (1, 28)


def test_the_download_path_gives_a_release_s_module_its_toolchain(tmp_path, monkeypatch):
    """ensure_module runs `go mod download` with GOTOOLCHAIN=go1.27.3 for 1.38's module on a Go 1.26 machine
    (without it the download fails: "requires go >= 1.27.0"), and with the machine's go for every other version,
    the parity baseline (no release of versions.toml) included."""
    go = fake_go(tmp_path / "bin", "go1.26.8")
    monkeypatch.setattr(upstream.shutil, "which", lambda name: str(go))
    modcache = tmp_path / "cache" / "mod"
    modcache.mkdir(parents=True)
    wanted = [paths.load_versions(r)["kubernetes"]["version"] for r in paths.releases()] + [DATA.baseline]
    for version in wanted:
        assert upstream.ensure_module(version, modcache) == module_dir(version, modcache)
    recorded = (tmp_path / "cache" / "toolchains").read_text().split()
    expected = {"v1.38.0-beta.0": "go1.27.3"}
    assert recorded == [expected.get(version, "unset") for version in wanted]
