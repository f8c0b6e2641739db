"""images/: the catalog against its schema and the suites, every Dockerfile, and build.sh's exact commands."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
IMAGES = ROOT / "images"
CATALOG = IMAGES / "catalog.yaml"
SCHEMA = IMAGES / "catalog.schema.json"
BUILD = IMAGES / "build.sh"
HELPER = IMAGES / "lib" / "catalog.py"

sys.path.insert(0, str(IMAGES / "lib"))
import catalog as catalog_lib  # noqa: E402  (images/lib/catalog.py, the build helper)

LTSC2022 = 20348


@pytest.fixture(scope="module")
def catalog() -> dict:
    return yaml.safe_load(CATALOG.read_text())


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def own_images(catalog: dict) -> dict:
    return {k: v for k, v in catalog["images"].items() if not v["upstream"]}


def runs_on(host_build: int, image_build: int) -> bool:
    """containerd's process-isolation rule (REFERENCE.md section 1)."""
    if host_build < LTSC2022:
        return host_build == image_build
    return LTSC2022 <= image_build <= host_build


# ----------------------------------------------------------------------------- the catalog


def test_catalog_validates_against_its_schema(catalog, validator):
    errors = sorted(validator.iter_errors(catalog), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)


@pytest.mark.parametrize(
    "mutate, fragment",
    [
        (lambda c: c["images"]["nettools"].pop("source"), "'source' is a required property"),
        (lambda c: c["images"]["agnhost"].update(source="images/agnhost"), "should not be valid"),
        (lambda c: c["images"]["busybox"].update(os=["linux", "macos"]), "'macos' is not one of"),
        (lambda c: c["images"]["pause"].update(windows_versions=["1809"]), "does not match"),
        (lambda c: c["images"]["nettools"].update(base="alpine"), "'alpine' is not one of"),
        (lambda c: c.update(registries={"winconRegistry": "Not A Registry"}), "does not match"),
        (lambda c: c["windows_versions"]["ltsc2022"].pop("build"), "'build' is a required property"),
        (lambda c: c["images"]["agnhost"].update(colour="blue"), "Additional properties are not allowed"),
        (lambda c: c["images"]["agnhost"].pop("upstream_id"), "'upstream_id' is a required property"),
        (lambda c: c["images"]["busybox"].pop("windows_versions_source"), "'windows_versions_source' is a required"),
        (lambda c: c["images"]["nettools"].update(upstream_id="Nettools"), "should not be valid"),
        (lambda c: c["images"]["nonroot"]["newer_than_upstream"].pop("why"), "'why' is a required property"),
    ],
)
def test_schema_rejects_malformed_entries(catalog, validator, mutate, fragment):
    broken = json.loads(json.dumps(catalog))
    mutate(broken)
    messages = [e.message for e in validator.iter_errors(broken)]
    assert any(fragment in m for m in messages), messages


# ----------------------------------------------------------------------------- upstream at the pinned Kubernetes

# BASEIMAGE's Windows keys (windows/amd64/<key>) -> the catalog's version names.
BASEIMAGE_VERSIONS = {"1809": "ltsc2019", "ltsc2019": "ltsc2019", "ltsc2022": "ltsc2022", "ltsc2025": "ltsc2025"}
MANIFEST_CONFIG = re.compile(r'configs\[(\w+)\] = Config\{list\.(\w+), "([^"]+)", "([^"]+)"\}')
REGISTRY_FIELD = re.compile(r'(?m)^\s+(\w+)\s+string\s+`yaml:"(\w+)"`')


def upstream_images(catalog: dict) -> dict:
    return {k: v for k, v in catalog["images"].items() if v["upstream"]}


def read_pinned_tree() -> Path:
    """k8s.io/kubernetes's module tree at the release the local cluster is pinned to (versions.toml's default),
    from the Go module cache; `go mod download` fetches it when it is not there."""
    from wincon.localcluster import build, paths

    versions = paths.load_versions(paths.default_release())
    module = f"k8s.io/kubernetes@{versions['kubernetes']['version']}"
    go = shutil.which("go")
    if not go:
        pytest.fail(
            f"cannot read {module}'s test/utils/image/manifest.go: the go command is not installed "
            "(install Go, see README, so that `go mod download` can fetch the module tree)"
        )
    command = [go, "mod", "download", "-json", module]
    try:
        result = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=900,
            cwd=ROOT,
            env={**os.environ, **build.go_environment(versions)},
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"`{' '.join(command)}` did not finish in 900 s: the module tree cannot be read")
    try:
        info = json.loads(result.stdout or "{}")
    except json.JSONDecodeError:
        info = {}
    tree = Path(info.get("Dir") or "/nonexistent")
    if result.returncode or not (tree / "test" / "utils" / "image" / "manifest.go").is_file():
        why = info.get("Error") or result.stderr.strip()[-400:] or f"no manifest.go under {tree}"
        pytest.fail(
            f"cannot read {module}'s test/utils/image/manifest.go: `{' '.join(command)}` failed: {why}. "
            "The catalog's upstream tags are checked against it: reach the Go module proxy, or put the module "
            "into the module cache (GOMODCACHE), and run again"
        )
    return tree


@pytest.fixture(scope="module")
def pinned_tree() -> Path:
    return read_pinned_tree()


@pytest.fixture(scope="module")
def manifest_configs(pinned_tree) -> dict[str, tuple[str, str, str]]:
    """ImageID -> (registry key as in a repo list, image name, tag), from the pinned manifest.go."""
    text = (pinned_tree / "test" / "utils" / "image" / "manifest.go").read_text()
    registry_keys = dict(REGISTRY_FIELD.findall(text))
    configs = {i: (registry_keys.get(field, field), name, tag) for i, field, name, tag in MANIFEST_CONFIG.findall(text)}
    assert "Agnhost" in configs and "promoterE2eRegistry" in registry_keys.values(), "manifest.go's format changed"
    return configs


def tag_key(tag: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", tag))


def tree_build(tree: Path, spec: dict) -> tuple[str, set[str] | None] | None:
    """(tag, Windows versions) that the pinned tree's own sources build for this image, where they say it:
    test/images/<name>/VERSION with BASEIMAGE's windows/amd64/<version> lines, or build/pause's Makefile TAG
    with the CHANGELOG (the pause Makefile reads its Windows versions from its base image's manifest list, so
    only a CHANGELOG that names Windows Server 2025 for the tag shows the ltsc2025 entry)."""
    source = tree / "test" / "images" / spec["name"]
    if (source / "VERSION").is_file():
        baseimage = (source / "BASEIMAGE").read_text() if (source / "BASEIMAGE").is_file() else ""
        found = {BASEIMAGE_VERSIONS[v] for v in re.findall(r"(?m)^windows/amd64/([\w.]+)=", baseimage)}
        return (source / "VERSION").read_text().strip(), found
    if spec["name"] == "pause":
        tag = re.search(r"(?m)^TAG \?= (\S+)", (tree / "build" / "pause" / "Makefile").read_text())
        changelog = (tree / "build" / "pause" / "CHANGELOG.md").read_text()
        assert tag, "build/pause/Makefile has no TAG"
        section = changelog.split(f"# {tag.group(1)}\n", 1)[-1].split("\n# ", 1)[0]
        return tag.group(1), ({"ltsc2025"} if "ltsc2025" in section else set())
    return None


def test_upstream_images_are_at_the_tag_the_pinned_manifest_names_or_say_why_newer(catalog, manifest_configs):
    supported = set(catalog["windows_versions"])
    for key, spec in upstream_images(catalog).items():
        assert spec["upstream_id"] in manifest_configs, f"{key}: {spec['upstream_id']} is not in manifest.go"
        registry, name, tag = manifest_configs[spec["upstream_id"]]
        assert (spec["registry"], spec["name"]) == (registry, name), f"{key}: manifest.go names {registry} {name}"
        newer = spec.get("newer_than_upstream")
        if spec["tag"] == tag:
            assert newer is None, f"{key} is at manifest.go's tag {tag}: newer_than_upstream must go"
            continue
        assert newer, f"{key} is at {spec['tag']}, manifest.go names {tag}: follow it or say why newer"
        assert newer["upstream_tag"] == tag, f"{key}: newer_than_upstream names {newer['upstream_tag']}, not {tag}"
        assert tag_key(spec["tag"]) > tag_key(tag), f"{key}: {spec['tag']} is not newer than {tag}"
        lacking = supported - set(newer["upstream_windows_versions"])
        assert lacking, f"{key}: {tag} covers every supported version, so the catalog must use it"
        assert lacking <= set(spec["windows_versions"]), f"{key}: {spec['tag']} lacks {lacking} as well"
        for version in lacking:
            assert version in newer["why"], f"{key}: the why does not name {version}"


def test_upstream_windows_versions_agree_with_the_pinned_tree_s_own_build_files(catalog, pinned_tree):
    """Where the pinned tree builds the catalog's tag, its BASEIMAGE (or pause's CHANGELOG) shows the Windows
    entries the catalog records; an image at a newer tag than manifest.go's must be the one that tree builds."""
    compared = []
    for key, spec in upstream_images(catalog).items():
        built = tree_build(pinned_tree, spec)
        if spec.get("newer_than_upstream"):
            assert built and built[0] == spec["tag"], f"{key}: the pinned tree builds {built}, not {spec['tag']}"
        if built is None or built[0] != spec["tag"] or "windows" not in spec["os"]:
            continue
        tag, versions = built
        if spec["name"] == "pause":
            assert ("ltsc2025" in spec["windows_versions"]) == ("ltsc2025" in versions), key
        else:
            assert versions == set(spec["windows_versions"]), f"{key}: BASEIMAGE of {tag} builds {sorted(versions)}"
        compared.append(key)
    assert {"pause", "nonroot", "resource-consumer", "agnhost"} <= set(compared), compared


def test_every_upstream_windows_image_has_an_entry_for_every_supported_version(catalog):
    """The images follow upstream to tags whose manifest lists carry every supported build: only an exact build
    runs under Hyper-V isolation and on a containerd whose matcher wants it (see the catalog's header)."""
    supported = set(catalog["windows_versions"])
    for key, spec in upstream_images(catalog).items():
        if "windows" in spec["os"]:
            missing = supported - set(spec["windows_versions"])
            assert not missing or spec.get("upstream_limited"), f"{key} has no {sorted(missing)} entry"


def test_a_missing_module_tree_is_a_clear_failure(monkeypatch):
    """No go command: the fixture fails and names what it could not read and how to fix it."""
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(pytest.fail.Exception) as failure:
        read_pinned_tree()
    assert "test/utils/image/manifest.go" in str(failure.value) and "install Go" in str(failure.value)


def test_every_image_names_a_defined_registry(catalog):
    for key, spec in catalog["images"].items():
        assert spec["registry"] in catalog["registries"], f"{key}: registry {spec['registry']} undefined"


def test_own_images_cover_every_supported_windows_version(catalog):
    supported = set(catalog["windows_versions"])
    for key, spec in own_images(catalog).items():
        assert set(spec["windows_versions"]) == supported, f"{key} must be built for {sorted(supported)}"


def test_every_windows_image_runs_on_every_supported_version_or_says_why_not(catalog):
    builds = {name: v["build"] for name, v in catalog["windows_versions"].items()}
    for key, spec in catalog["images"].items():
        if "windows" not in spec["os"]:
            continue
        own = set(spec["windows_versions"])
        lacking = sorted(set(builds) - own)
        if lacking:
            assert spec.get("upstream_limited"), f"{key} has no entry for {lacking} and does not say why"
            assert "hyper-v" in spec["upstream_limited"].lower(), f"{key}: say that Hyper-V pods need the exact build"
        for version, host in builds.items():
            entries = [builds[v] for v in own]
            assert any(runs_on(host, b) for b in entries), (
                f"{key}: no manifest entry runs on {version} ({host}); entries: {sorted(own)}"
            )


def test_own_images_share_a_name_only_with_distinct_tags(catalog):
    refs = [(s["registry"], s["name"], s["tag"]) for s in catalog["images"].values()]
    assert len(refs) == len(set(refs)), "two catalog entries resolve to the same image reference"


SUITE_REFERENCE = re.compile(r"""\b(?:catalog_image|image)\(\s*["']([a-z0-9][a-z0-9-]*)["']""")
TEMPLATE_REFERENCE = re.compile(r"""\{\{\s*(?:images?|catalog)\.([a-z0-9_-]+)\s*\}\}""")


def referenced_images() -> dict[str, list[str]]:
    """Catalog keys the suites and manifests name, e.g. image("agnhost") or {{ images.nettools }}."""
    found: dict[str, list[str]] = {}
    for base, pattern, glob in (
        (ROOT / "suites", SUITE_REFERENCE, "*.py"),
        (ROOT / "wincon", SUITE_REFERENCE, "*.py"),
        (ROOT / "manifests", TEMPLATE_REFERENCE, "*.yaml"),
    ):
        if not base.is_dir():
            continue
        for path in base.rglob(glob):
            for key in pattern.findall(path.read_text(errors="replace")):
                found.setdefault(key, []).append(str(path.relative_to(ROOT)))
    return found


def test_every_image_the_suites_use_is_in_the_catalog_for_every_version(catalog):
    builds = {name: v["build"] for name, v in catalog["windows_versions"].items()}
    problems = []
    for key, where in sorted(referenced_images().items()):
        spec = catalog["images"].get(key)
        if spec is None:
            problems.append(f"{key} (used in {', '.join(sorted(set(where)))}) is not in images/catalog.yaml")
            continue
        if "windows" in spec["os"]:
            entries = [builds[v] for v in spec["windows_versions"]]
            for version, host in builds.items():
                if not any(runs_on(host, b) for b in entries):
                    problems.append(f"{key} has no entry that runs on {version}")
    assert not problems, "\n".join(problems)


def test_the_reference_scanner_finds_the_forms_the_suites_use(tmp_path):
    sample = 'img = catalog.image("nettools", "windows", build)\nx = catalog_image( "hook-recorder" )\n'
    assert SUITE_REFERENCE.findall(sample) == ["nettools", "hook-recorder"]
    assert TEMPLATE_REFERENCE.findall("image: {{ images.agnhost }}") == ["agnhost"]


def test_the_framework_loads_the_catalog_and_picks_images_per_build(catalog):
    pytest.importorskip("wincon.workloads.catalog")
    from wincon.commandline.errors import InfrastructureError
    from wincon.workloads.catalog import Catalog

    loaded = Catalog.load(CATALOG)
    assert set(loaded.images) == set(catalog["images"])
    nettools = loaded.image("nettools", "windows", 26100)
    assert nettools.endswith("/wincon-nettools:1.0.0")
    assert loaded.image("agnhost", "windows", 26100) == loaded.images["agnhost"].reference(loaded.registries)
    with pytest.raises(InfrastructureError):
        loaded.image("agnhost", "windows", 19041)  # a build no entry runs on


# ----------------------------------------------------------------------------- Dockerfiles


def dockerfiles() -> list[Path]:
    return sorted(IMAGES.glob("*/Dockerfile"))


def parse(path: Path, build_args: dict[str, str] | None = None):
    dockerfile_parse = pytest.importorskip("dockerfile_parse", reason="pip install dockerfile-parse")
    return dockerfile_parse.DockerfileParser(fileobj=io.BytesIO(path.read_bytes()), build_args=build_args or {})


def test_every_own_image_has_a_dockerfile_and_every_dockerfile_an_image(catalog):
    sources = {spec["source"] for spec in own_images(catalog).values()}
    on_disk = {str(p.parent.relative_to(ROOT)) for p in dockerfiles()}
    assert sources == on_disk


@pytest.mark.parametrize("path", dockerfiles(), ids=lambda p: p.parent.name)
def test_dockerfile_parses_and_follows_the_windows_build_rules(path, catalog):
    parser = parse(path)
    instructions = [i for i in parser.structure if i["instruction"] != "COMMENT"]
    assert instructions, f"{path} has no instructions"
    words = [i["instruction"] for i in instructions]
    first_from = words.index("FROM")
    global_args = {i["value"].split("=")[0].strip() for i in instructions[:first_from] if i["instruction"] == "ARG"}
    assert "WINDOWS_VERSION" in global_args, "ARG WINDOWS_VERSION must be declared before the first FROM"
    assert "BASE_REGISTRY" in global_args, "the base registry must be a build argument, not a literal host"

    stages = [n for n, w in enumerate(words) if w == "FROM"]
    stage_names = set()
    for n in stages:
        value = instructions[n]["value"]
        for var in re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", value):
            assert var in global_args, f"FROM uses ${var}, which is not a global ARG"
        match = re.search(r"\bAS\s+(\S+)\s*$", value, re.IGNORECASE)
        if match:
            stage_names.add(match.group(1))
        image = [w for w in value.split() if not w.startswith("--")][0]
        assert image.startswith("${"), f"{value}: the registry must come from a build argument"

    final = instructions[stages[-1]]["value"]
    assert "--platform=linux" not in final, "the final stage must be the Windows image"
    assert "${WINDOWS_VERSION}" in final, "the final stage's base tag must follow WINDOWS_VERSION"
    final_stage = instructions[stages[-1] + 1 :]
    assert not [i for i in final_stage if i["instruction"] == "RUN"], (
        "a Windows stage cannot RUN when built on Linux with buildx: prepare files in a Linux stage"
    )
    for inst in final_stage:
        if inst["instruction"] in ("COPY", "ADD"):
            parts = inst["value"].split()
            source_from = [p.split("=", 1)[1] for p in parts if p.startswith("--from=")]
            if source_from:
                assert source_from[0] in stage_names, f"COPY --from={source_from[0]}: no such stage"
                continue
            for src in [p for p in parts if not p.startswith("--")][:-1]:
                pattern = re.sub(r"\$\{?PAGE_VERSION\}?", "*", src)
                assert list(path.parent.glob(pattern.rstrip("/"))), f"COPY source {src} missing in {path.parent}"

    spec = next(s for s in own_images(catalog).values() if s["source"] == str(path.parent.relative_to(ROOT)))
    assert f"/windows/{spec['base']}" in final, f"catalog says base {spec['base']}, the Dockerfile says {final}"
    entry = {"ENTRYPOINT", "CMD"} & set(words[stages[-1] :])
    assert entry or "/iis:" in final, "the image needs an ENTRYPOINT or CMD (only the IIS base brings its own)"


def test_the_build_helper_reads_dockerfiles_like_dockerfile_parse(catalog):
    for path in dockerfiles():
        values = {"BASE_REGISTRY": "base.example", "BUILD_REGISTRY": "lib.example", "WINDOWS_VERSION": "ltsc2025"}
        expected = parse(path, values).baseimage
        assert catalog_lib.final_base(path, values) == expected


@pytest.mark.parametrize("ext", ["ps1"])
def test_nettools_scripts_print_json_and_set_the_exit_code(ext):
    scripts = sorted((IMAGES / "nettools" / "scripts").glob(f"*.{ext}"))
    assert {p.stem for p in scripts} == {"resolve", "tcp", "icmp"}
    for script in scripts:
        text = script.read_text()
        assert "ConvertTo-Json -Compress" in text and "exit 1" in text, script.name
        assert text.count("{") == text.count("}"), f"{script.name}: unbalanced braces"


@pytest.mark.skipif(shutil.which("go") is None, reason="Go is not installed: the hook-recorder's own tests need it")
def test_hook_recorder_go_tests_pass_and_it_builds_for_windows(tmp_path):
    env = {**os.environ, "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0"}
    source = IMAGES / "hook-recorder"
    test = subprocess.run(["go", "test", "./..."], cwd=source, env=env, capture_output=True, text=True, timeout=300)
    assert test.returncode == 0, test.stdout + test.stderr
    build = subprocess.run(
        ["go", "build", "-o", str(tmp_path / "hook-recorder.exe"), "."],
        cwd=source,
        env={**env, "GOOS": "windows", "GOARCH": "amd64"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr
    assert (tmp_path / "hook-recorder.exe").read_bytes()[:2] == b"MZ"


# ----------------------------------------------------------------------------- os.version parsing


def test_os_version_is_read_from_a_manifest_list():
    doc = {
        "schemaVersion": 2,
        "manifests": [
            {"platform": {"architecture": "amd64", "os": "windows", "os.version": "10.0.20348.2527"}},
            {"platform": {"architecture": "amd64", "os": "windows", "os.version": "10.0.20348.2655"}},
            {"platform": {"architecture": "amd64", "os": "linux"}},
        ],
    }
    assert catalog_lib.os_version(json.dumps(doc), 20348) == "10.0.20348.2655"


def test_os_version_is_read_from_verbose_output_of_a_list_and_of_one_manifest():
    verbose_list = [{"Ref": "x", "Descriptor": {"platform": {"os": "windows", "os.version": "10.0.17763.6054"}}}]
    assert catalog_lib.os_version(json.dumps(verbose_list), 17763) == "10.0.17763.6054"
    verbose_one = {"Ref": "x", "Descriptor": {"platform": {"os": "windows", "os.version": "10.0.26100.1742"}}}
    assert catalog_lib.os_version(json.dumps(verbose_one), 26100) == "10.0.26100.1742"


def test_os_version_of_the_wrong_build_is_a_clear_error():
    doc = {"manifests": [{"platform": {"os": "windows", "os.version": "10.0.17763.6054"}}]}
    with pytest.raises(catalog_lib.CatalogError, match=r"no Windows entry of build 20348 .*10\.0\.17763\.6054"):
        catalog_lib.os_version(json.dumps(doc), 20348, "base:ltsc2022")


def test_os_version_command_reads_stdin():
    doc = json.dumps({"manifests": [{"platform": {"os": "windows", "os.version": "10.0.20348.1"}}]})
    out = subprocess.run(
        [sys.executable, str(HELPER), "os-version", "--build", "20348"], input=doc, capture_output=True, text=True
    )
    assert (out.returncode, out.stdout.strip()) == (0, "10.0.20348.1")
    bad = subprocess.run(
        [sys.executable, str(HELPER), "os-version", "--build", "20348"], input="{}", capture_output=True, text=True
    )
    assert bad.returncode == 4 and "fix:" in bad.stderr


# ----------------------------------------------------------------------------- build.sh


def build_sh(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    clean_path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if not Path(p, "docker").exists())
    return subprocess.run(
        ["bash", str(BUILD), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": clean_path, **(env or {})},
        timeout=60,
    )


@pytest.fixture()
def repo_list(tmp_path) -> Path:
    path = tmp_path / "repo-list.yaml"
    path.write_text("microsoftRegistry: mirror.example/microsoft\ndockerLibraryRegistry: mirror.example/library\n")
    return path


def test_dry_run_prints_the_exact_commands_without_docker(repo_list):
    result = build_sh(
        "--dry-run",
        "--image",
        "nettools",
        "--versions",
        "ltsc2019,ltsc2025",
        "--registry",
        "push.example/team",
        "--image-repo-list",
        str(repo_list),
    )
    assert result.returncode == 0, result.stderr
    r = "push.example/team/wincon-nettools"
    base = "mirror.example/microsoft/windows/servercore"
    golden = [
        "docker buildx build --platform windows/amd64 --provenance=false --sbom=false --pull --push"
        " --build-arg WINDOWS_VERSION=ltsc2019 --build-arg BASE_REGISTRY=mirror.example/microsoft"
        f" --label org.opencontainers.image.version=1.0.0-windows-amd64-ltsc2019 --label io.wincon.image=nettools"
        f" --tag {r}:1.0.0-windows-amd64-ltsc2019 --file images/nettools/Dockerfile images/nettools",
        "docker buildx build --platform windows/amd64 --provenance=false --sbom=false --pull --push"
        " --build-arg WINDOWS_VERSION=ltsc2025 --build-arg BASE_REGISTRY=mirror.example/microsoft"
        f" --label org.opencontainers.image.version=1.0.0-windows-amd64-ltsc2025 --label io.wincon.image=nettools"
        f" --tag {r}:1.0.0-windows-amd64-ltsc2025 --file images/nettools/Dockerfile images/nettools",
        f"docker manifest create --amend {r}:1.0.0 {r}:1.0.0-windows-amd64-ltsc2019 {r}:1.0.0-windows-amd64-ltsc2025",
        f"os_version_ltsc2019=$(docker manifest inspect {base}:ltsc2019 | python3 images/lib/catalog.py os-version"
        f" --build 17763 --ref {base}:ltsc2019)",
        f'docker manifest annotate --os windows --arch amd64 --os-version "${{os_version_ltsc2019}}" {r}:1.0.0'
        f" {r}:1.0.0-windows-amd64-ltsc2019",
        f"os_version_ltsc2025=$(docker manifest inspect {base}:ltsc2025 | python3 images/lib/catalog.py os-version"
        f" --build 26100 --ref {base}:ltsc2025)",
        f'docker manifest annotate --os windows --arch amd64 --os-version "${{os_version_ltsc2025}}" {r}:1.0.0'
        f" {r}:1.0.0-windows-amd64-ltsc2025",
        f"docker manifest push --purge {r}:1.0.0",
    ]
    assert result.stdout.splitlines() == golden


def test_dry_run_of_a_multi_stage_image_passes_the_build_stage_registry_and_catalog_build_args(repo_list):
    hook = build_sh(
        "--dry-run", "--image", "hook-recorder", "--versions", "ltsc2022", "--image-repo-list", str(repo_list)
    )
    assert hook.returncode == 0, hook.stderr
    first = hook.stdout.splitlines()[0]
    assert "--build-arg BUILD_REGISTRY=mirror.example/library" in first
    iis = build_sh("--dry-run", "--image", "iis-v2", "--versions", "ltsc2022", "--image-repo-list", str(repo_list))
    lines = iis.stdout.splitlines()
    assert "--build-arg PAGE_VERSION=v2" in lines[0] and ":1.0.0-v2-windows-amd64-ltsc2022" in lines[0]
    assert "mirror.example/microsoft/windows/servercore/iis:windowsservercore-ltsc2022" in lines[2]


def test_dry_run_of_everything_builds_each_own_image_for_each_version(catalog):
    result = build_sh("--dry-run")
    assert result.returncode == 0, result.stderr
    builds = [line for line in result.stdout.splitlines() if line.startswith("docker buildx build")]
    pushes = [line for line in result.stdout.splitlines() if line.startswith("docker manifest push")]
    own = own_images(catalog)
    assert len(builds) == sum(len(s["windows_versions"]) for s in own.values())
    assert len(pushes) == len(own)
    registry = catalog["registries"]["winconRegistry"]
    assert all(f"{registry}/" in line for line in pushes)


WORKFLOW = ROOT / ".github" / "workflows" / "images.yml"


def workflow_job() -> tuple[dict, dict]:
    flow = yaml.safe_load(WORKFLOW.read_text())
    (job,) = flow["jobs"].values()
    return flow, job


def test_the_images_workflow_builds_with_buildx_on_linux_and_pushes_where_the_catalog_names(catalog, tmp_path):
    flow, job = workflow_job()
    triggers = flow.get("on", flow.get(True))  # PyYAML reads the bare key `on` as True
    assert {"push", "pull_request", "workflow_dispatch"} <= set(triggers)
    assert job["runs-on"].startswith("ubuntu-") and flow["permissions"]["packages"] == "write"
    steps = job["steps"]
    runs = [s.get("run", "").strip() for s in steps]
    uses = [s.get("uses", "") for s in steps]
    dry, build = runs.index("images/build.sh --dry-run"), runs.index("images/build.sh")  # no --registry/--versions
    buildx = next(i for i, u in enumerate(uses) if u.startswith("docker/setup-buildx-action@"))
    login = next(i for i, u in enumerate(uses) if u.startswith("docker/login-action@"))
    assert dry < buildx < login < build
    for i in (buildx, login, build):
        assert steps[i]["if"] == "github.event_name != 'pull_request'", "a pull request must not push"
    assert "if" not in steps[dry]
    # The login goes to the host of the catalog's winconRegistry, read by the workflow's own step.
    (host_step,) = [s for s in steps if s.get("id") == "catalog"]
    assert steps[login]["with"]["registry"] == "${{ steps.catalog.outputs.host }}"
    output = tmp_path / "github_output"
    result = subprocess.run(
        ["bash", "-c", host_step["run"]], cwd=ROOT, env={**os.environ, "GITHUB_OUTPUT": str(output)}, timeout=60
    )
    assert result.returncode == 0
    assert output.read_text() == f"host={catalog['registries']['winconRegistry'].split('/')[0]}\n"


def test_the_workflow_s_dry_run_pushes_each_own_image_for_ltsc2022_and_ltsc2025_with_its_os_version(catalog):
    """The dry run the workflow runs first: each own image is built and pushed for both current LTSC releases, and
    its manifest list, at the reference the catalog names, carries each entry annotated with the os.version read
    from that release's base image."""
    result = build_sh("--dry-run")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    registry = catalog["registries"]["winconRegistry"]
    builds = {name: v["build"] for name, v in catalog["windows_versions"].items()}
    for key, spec in own_images(catalog).items():
        ref = f"{registry}/{spec['name']}:{spec['tag']}"
        for version in ("ltsc2022", "ltsc2025"):
            entry = f"{ref}-windows-amd64-{version}"
            pushed = [line for line in lines if line.startswith("docker buildx build") and f"--tag {entry} " in line]
            assert len(pushed) == 1 and " --push " in pushed[0] and "--platform windows/amd64" in pushed[0], key
            assert f"--build-arg WINDOWS_VERSION={version}" in pushed[0]
            annotate = [line for line in lines if line.startswith("docker manifest annotate") and line.endswith(entry)]
            assert annotate and f'--os-version "${{os_version_{version}}}" {ref} {entry}' in annotate[0], key
            read = [
                line
                for line in lines
                if line.startswith(f"os_version_{version}=$(") and f"--build {builds[version]}" in line
            ]
            assert read, f"{key}: the os.version of {version} is not read from its base image"
        assert f"docker manifest push --purge {ref}" in lines, key


@pytest.mark.parametrize(
    "args, message",
    [
        (["--image", "agnhost"], "agnhost is an upstream image"),
        (["--image", "nosuch"], "no such image"),
        (["--versions", "ltsc2016"], "not a supported Windows version"),
        (["--bogus"], "unknown option"),
        (["--registry"], "--registry needs a value"),
    ],
)
def test_bad_usage_is_one_clear_error_with_exit_4(args, message):
    result = build_sh("--dry-run", *args)
    assert result.returncode == 4
    assert message in result.stderr and "fix:" in result.stderr
    assert result.stdout == ""


def test_without_docker_a_real_build_stops_with_the_infrastructure_code():
    result = build_sh("--image", "nettools")
    assert result.returncode == 3
    assert "docker is not installed" in result.stderr


def test_a_real_build_runs_the_commands_and_annotates_the_read_os_version(tmp_path, repo_list):
    """A stand-in docker records its calls and answers `manifest inspect` like a registry would."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls.txt"
    docker = bin_dir / "docker"
    docker.write_text(
        "#!/usr/bin/env bash\n"
        f'echo "$*" >> {calls}\n'
        'if [[ "$1 $2" == "manifest inspect" ]]; then\n'
        '  case "$3" in *ltsc2022) b=20348;; *) b=17763;; esac\n'
        '  printf \'{"manifests":[{"platform":{"os":"windows","architecture":"amd64","os.version":"10.0.%s.99"}}]}\' "$b"\n'
        "fi\n"
    )
    docker.chmod(0o755)
    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(
        ["bash", str(BUILD), "--image", "nettools", "--versions", "ltsc2022", "--image-repo-list", str(repo_list)],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    recorded = calls.read_text().splitlines()
    assert any(c.startswith("buildx build --platform windows/amd64") for c in recorded)
    assert "manifest inspect mirror.example/microsoft/windows/servercore:ltsc2022" in recorded
    annotate = [c for c in recorded if c.startswith("manifest annotate")]
    assert annotate and "--os-version 10.0.20348.99" in annotate[0]
    assert recorded[-1].startswith("manifest push --purge")
