#!/usr/bin/env python3
"""Catalog queries for images/build.sh: the build plan, and a base image's os.version.

    catalog.py plan [--catalog FILE] [--image-repo-list FILE] [--registry REG] [--images a,b] [--versions v,w]
    docker manifest inspect REF | catalog.py os-version --build 20348 [--ref REF]

`plan` prints tab-separated records, one per line:
    image <key> <manifest-list ref> <source dir>
    build <key> <version> <build> <per-version ref> <base image ref> <Dockerfile> <context> <K=V ...>
The base image is the final FROM of the image's Dockerfile with its build arguments filled in, so the
os.version annotated on the manifest list is read from the very image the build starts from.

Errors name the problem and the fix and exit 4 (usage), as wincon does.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CATALOG = ROOT / "images" / "catalog.yaml"
EXIT_USAGE = 4

# Dockerfile build arguments that name a registry, and the catalog registry key each one takes.
REGISTRY_ARGS = {"BASE_REGISTRY": "microsoftRegistry", "BUILD_REGISTRY": "dockerLibraryRegistry"}
VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


class CatalogError(Exception):
    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.fix = fix


def load_yaml(path: Path, what: str) -> Any:
    try:
        return yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise CatalogError(f"{what} {path} cannot be read: {exc}", f"pass a readable YAML {what}") from exc


def dockerfile_instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with comments dropped and continuation lines joined."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise CatalogError(f"Dockerfile {path} cannot be read: {exc}", "restore the image's Dockerfile") from exc
    escape = "\\"
    lines = text.splitlines()
    for line in lines:  # parser directives come first, as comments
        match = re.match(r"#\s*escape\s*=\s*(\S)\s*$", line)
        if match:
            escape = match.group(1)
            break
        if not line.startswith("#"):
            break
    result: list[tuple[str, str]] = []
    current = ""
    for line in lines:
        stripped = line.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        if current and stripped.startswith("#"):
            continue
        if stripped.endswith(escape):
            current += stripped[: -len(escape)] + " "
            continue
        current += stripped
        word, _, rest = current.partition(" ")
        result.append((word.upper(), rest.strip()))
        current = ""
    if current:
        raise CatalogError(f"Dockerfile {path} ends inside a continued line", "remove the trailing escape")
    return result


def global_args(instructions: list[tuple[str, str]]) -> dict[str, str | None]:
    """The ARGs declared before the first FROM (the only ones a FROM line may use), with defaults."""
    args: dict[str, str | None] = {}
    for word, rest in instructions:
        if word == "FROM":
            break
        if word == "ARG":
            name, sep, default = rest.partition("=")
            args[name.strip()] = default.strip().strip('"') if sep else None
    return args


def substitute(text: str, values: dict[str, str], where: str) -> str:
    def one(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name not in values:
            raise CatalogError(f"{where} uses ${{{name}}}, which has no value", f"declare ARG {name} with a default")
        return values[name]

    return VAR.sub(one, text)


def final_base(dockerfile: Path, values: dict[str, str]) -> str:
    froms = [rest for word, rest in dockerfile_instructions(dockerfile) if word == "FROM"]
    if not froms:
        raise CatalogError(f"Dockerfile {dockerfile} has no FROM", "start the image from a Windows base image")
    words = [w for w in froms[-1].split() if not w.startswith("--")]
    return substitute(words[0], values, f"{dockerfile}: FROM {froms[-1]}")


def plan(ns: argparse.Namespace) -> list[str]:
    catalog_path = Path(ns.catalog)
    data = load_yaml(catalog_path, "image catalog") or {}
    registries = dict(data.get("registries") or {})
    if ns.image_repo_list:
        overrides = load_yaml(Path(ns.image_repo_list), "image repo list")
        if not isinstance(overrides, dict) or not all(isinstance(v, str) for v in overrides.values()):
            raise CatalogError(
                f"image repo list {ns.image_repo_list} must map registry keys to strings",
                "write it as 'winconRegistry: my.registry/wincon', one key per line",
            )
        registries.update(overrides)
    if ns.registry:
        registries["winconRegistry"] = ns.registry
    versions = data.get("windows_versions") or {}
    images = data.get("images") or {}
    own = {k: v for k, v in images.items() if not v.get("upstream", True)}

    wanted = [w for w in (ns.images or "").split(",") if w] or sorted(own)
    for key in wanted:
        if key not in images:
            raise CatalogError(
                f"--image {key}: no such image in {catalog_path}",
                f"use one of: {', '.join(sorted(own))}",
            )
        if key not in own:
            raise CatalogError(
                f"--image {key}: {key} is an upstream image; build.sh builds only wincon's own images",
                f"use one of: {', '.join(sorted(own))}",
            )
    chosen_versions = [v for v in (ns.versions or "").split(",") if v]
    for version in chosen_versions:
        if version not in versions:
            raise CatalogError(
                f"--versions {version}: not a supported Windows version",
                f"use some of: {', '.join(versions)}",
            )

    records: list[str] = []
    for key in wanted:
        spec = own[key]
        registry_key = spec["registry"]
        if registry_key not in registries:
            raise CatalogError(
                f"image {key} names registry {registry_key!r}, which is not defined",
                "add it under 'registries:' in the catalog or in --image-repo-list",
            )
        repo = f"{registries[registry_key].rstrip('/')}/{spec['name']}"
        list_ref = f"{repo}:{spec['tag']}"
        source = spec["source"]
        context = ROOT / source
        dockerfile = context / "Dockerfile"
        declared = global_args(dockerfile_instructions(dockerfile))
        stage_args = {
            w_rest.partition("=")[0].strip() for w, w_rest in dockerfile_instructions(dockerfile) if w == "ARG"
        }
        build_args = dict(spec.get("build_args") or {})
        for name in build_args:
            if name not in stage_args:
                raise CatalogError(
                    f"image {key}: build_args sets {name}, which {source}/Dockerfile does not declare",
                    f"add 'ARG {name}' to the Dockerfile or remove it from the catalog",
                )
        records.append("\t".join(["image", key, list_ref, source]))
        for version in chosen_versions or list(spec["windows_versions"]):
            if version not in spec["windows_versions"]:
                continue  # this image is not built for that version
            info = versions[version]
            args: dict[str, str] = {}
            if "WINDOWS_VERSION" in declared:
                args["WINDOWS_VERSION"] = str(info["base_tag"])
            for arg, reg_key in REGISTRY_ARGS.items():
                if arg in declared:
                    if reg_key not in registries:
                        raise CatalogError(
                            f"{source}/Dockerfile needs {arg}, but registry {reg_key!r} is not defined",
                            f"add {reg_key} under 'registries:' in the catalog or in --image-repo-list",
                        )
                    args[arg] = registries[reg_key].rstrip("/")
            args.update(build_args)
            values = {k: v for k, v in declared.items() if v is not None}
            values.update(args)
            base = final_base(dockerfile, values)
            ref = f"{repo}:{spec['tag']}-windows-amd64-{version}"
            arg_words = " ".join(f"{k}={v}" for k, v in args.items())
            if any(c.isspace() for c in "".join(args.values())):
                raise CatalogError(f"image {key}: a build argument contains whitespace", "remove it")
            records.append(
                "\t".join(
                    [
                        "build",
                        key,
                        version,
                        str(info["build"]),
                        ref,
                        base,
                        f"{source}/Dockerfile",
                        source,
                        arg_words,
                    ]
                )
            )
    return records


def os_version(document: str, build: int, ref: str = "the base image") -> str:
    """The Windows os.version of ``build`` in `docker manifest inspect [--verbose]` or `crane manifest` output."""
    try:
        data = json.loads(document)
    except json.JSONDecodeError as exc:
        raise CatalogError(f"manifest of {ref} is not JSON: {exc}", "check `docker manifest inspect` works") from exc
    platforms: list[dict[str, Any]] = []
    if isinstance(data, dict) and isinstance(data.get("manifests"), list):  # an index / manifest list
        platforms = [m.get("platform") or {} for m in data["manifests"]]
    elif isinstance(data, list):  # docker manifest inspect --verbose of a list
        platforms = [(m.get("Descriptor") or {}).get("platform") or {} for m in data]
    elif isinstance(data, dict) and "Descriptor" in data:  # --verbose of a single manifest
        platforms = [(data.get("Descriptor") or {}).get("platform") or {}]
    found = [p.get("os.version", "") for p in platforms if p.get("os") == "windows"]
    matching = [v for v in found if v.split(".")[2:3] == [str(build)]]
    if not matching:
        raise CatalogError(
            f"{ref} has no Windows entry of build {build} (os.version entries: {', '.join(found) or 'none'})",
            "check the base tag of this Windows version in images/catalog.yaml",
        )
    return max(matching, key=lambda v: [int(p) for p in v.split(".") if p.isdigit()])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="catalog.py", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plan")
    p.add_argument("--catalog", default=str(DEFAULT_CATALOG))
    p.add_argument("--image-repo-list")
    p.add_argument("--registry")
    p.add_argument("--images")
    p.add_argument("--versions")
    o = sub.add_parser("os-version")
    o.add_argument("--build", type=int, required=True)
    o.add_argument("--ref", default="the base image")
    ns = parser.parse_args(argv)
    try:
        if ns.command == "plan":
            print("\n".join(plan(ns)))
        else:
            print(os_version(sys.stdin.read(), ns.build, ns.ref))
    except CatalogError as exc:
        print(f"images: error: {exc}\n  fix: {exc.fix}", file=sys.stderr)
        return EXIT_USAGE
    return 0


if __name__ == "__main__":
    sys.exit(main())
