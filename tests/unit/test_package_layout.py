"""The top of wincon/ shows the architecture (issue 43, item 4): its modules live in packages by concern, and a
module sits loose at the top only for a reason named here.

A newcomer reads the tree: ``wincon/windows/`` is what Windows tools print and how it is read, ``wincon/clusterinfo/``
what the cluster is, and so on (``PACKAGES``). A new module goes into the package of its concern; one that must be
importable as ``wincon.<name>`` (an entry point that installed scripts or plugin registrations name) joins
``TOP_LEVEL`` with its reason.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "wincon"

# The modules allowed at the top of wincon/, each with its reason.
TOP_LEVEL = {
    "__init__": "the package itself (wincon.__version__)",
    "__main__": "`python -m wincon`",
    "cli": "the `wincon` console script: pyproject's [project.scripts] wincon = wincon.cli:main, which installed "
    "scripts import by that name",
    "plugin": "the pytest plugin: pyproject's [project.entry-points.pytest11] wincon = wincon.plugin and "
    "`-p wincon.plugin`, which installed entry points name",
}

# The packages of wincon/, each with its concern: where a new module belongs.
PACKAGES = {
    "windows": "what the suite runs in pods and how it reads what the tools print (forms, output forms, nltest, "
    "the network flows' command lines and parsers)",
    "clusterinfo": "what the cluster is (profile, nodes, AKS, capabilities)",
    "cluster": "talking to the cluster (client, kube, namespaces, waits, exec, diagnostics)",
    "workloads": "workloads and images (catalog, rendering, pinning, image use, verify, prepull, registry credentials)",
    "documents": "what upstream and the documents say (sources, limitations, upstream e2e, coverage, releases, "
    "test ids)",
    "session": "the pytest session the plugin drives (context, options, fixtures, collection, scheduling, controls, "
    "reports, verdicts)",
    "commandline": "the command line's parts (core commands, option names, verbosity, errors and exit codes)",
    "checks": "check helpers the suites share",
    "network": "the networking suites' framework",
    "results": "run results (JUnit, TestGrid layout, publishing, dashboard, gate)",
    "localcluster": "the embedded local cluster",
}


def loose_modules(package: Path) -> list[str]:
    """The modules at the top of ``package`` that ``TOP_LEVEL`` does not allow."""
    return sorted(p.stem for p in package.glob("*.py") if p.stem not in TOP_LEVEL)


def layout_problems(package: Path) -> list[str]:
    """One line per loose module: its name and where such a module belongs."""
    where = "; ".join(f"wincon/{name}/: {concern}" for name, concern in PACKAGES.items())
    return [
        f"wincon/{name}.py sits loose at the top of wincon/: move it into the package of its concern ({where}), "
        "or, if it must be importable as wincon." + name + " (an entry point), add it to TOP_LEVEL in "
        "tests/unit/test_package_layout.py with its reason"
        for name in loose_modules(package)
    ]


def test_no_module_sits_loose_at_the_top_of_wincon():
    problems = layout_problems(PACKAGE)
    assert not problems, "\n".join(problems)


def test_the_check_names_a_loose_module_and_where_it_belongs(tmp_path):
    pkg = tmp_path / "wincon"
    pkg.mkdir()
    for name in (*TOP_LEVEL, "extra"):
        (pkg / f"{name}.py").write_text("")
    (pkg / "windows").mkdir()
    (pkg / "windows" / "__init__.py").write_text("")
    (pkg / "windows" / "nested.py").write_text("")  # inside a package: not loose

    problems = layout_problems(pkg)

    assert len(problems) == 1
    assert problems[0].startswith("wincon/extra.py sits loose at the top of wincon/")
    assert "wincon/windows/: what the suite runs in pods" in problems[0]
    assert "TOP_LEVEL" in problems[0]


def test_every_package_of_wincon_says_its_concern_here_and_in_its_docstring():
    on_disk = sorted(p.parent.name for p in PACKAGE.glob("*/__init__.py"))
    assert on_disk == sorted(PACKAGES), "a package of wincon/ missing from PACKAGES, or one PACKAGES names is gone"
    for name in on_disk:
        assert ast.get_docstring(ast.parse((PACKAGE / name / "__init__.py").read_text())), (
            f"wincon/{name}/ says nothing"
        )


def test_the_entry_points_the_allow_list_names_are_the_ones_pyproject_declares():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["wincon"] == "wincon.cli:main"
    assert project["entry-points"]["pytest11"]["wincon"] == "wincon.plugin"
