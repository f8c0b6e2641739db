"""What a Windows check runs, declared, planned and linted: its own control's command, or a Windows form with evidence.

A data-plane Windows check with a Linux control proves something about Windows only where the two run the same
thing: the same agnhost subcommand, the same request to netexec, the same kubelet or API read, parsed by the
same code. A Windows-only form (ipconfig, curl.exe, PowerShell, testlimit, ...) must carry evidence that it
works in a Windows pod and prints what the parser reads. The declaration is a marker on the test (or its
module):

- ``@pytest.mark.windows_form(same_as_control=True)``: the Windows check runs its control's command (only
  where it has a control);
- ``@pytest.mark.windows_form("k8s.io/kubernetes@v1.37.2/test/e2e/windows/dns.go:82 ipconfig", ...)``: each
  Windows-only form's evidence: a line of upstream's code at the pinned version that runs it in a Windows pod
  of the same image (the optional word after the reference must appear on that line), or a recorded output
  ``tests/data/windows-outputs/<file>`` with its ``.source``;
- ``@pytest.mark.windows_form(no_command="what it reads")``: the Windows check runs no command in a pod (it
  reads the API server or the kubelet, as its control does);
- ``@pytest.mark.windows_form(unavailable="why")``: no Windows form with evidence exists: the Windows item is
  skipped at collection with that reason (the plan says so), its control still runs.

``wincon plan --json`` shows the declaration of every data-plane Windows item (``windows_form``); ``wincon
lint`` fails an item with none, or whose evidence does not resolve; ``wincon coverage`` prints the share of the
Windows items with a control that run their control's command (:func:`share`).
"""

from __future__ import annotations

import os
import re
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from wincon.session.controls import has_control, is_control
from wincon.windows import output_forms

MARKER = "windows_form"
REPO = Path(__file__).resolve().parents[2]
OUTPUTS = "tests/data/windows-outputs/"
_UPSTREAM = re.compile(r"^k8s\.io/kubernetes@(?P<version>v[\w.+-]+)/(?P<path>[\w./-]+):(?P<lines>\d+(?:[-,]\d+)*)$")


# Evidence the suites cite (``wincon lint`` resolves every one): upstream's e2e code at the pinned version running
# the form in a Windows pod, or a recorded output under tests/data/windows-outputs/.
_K = "k8s.io/kubernetes@v1.37.2/"
CURL_EXE = _K + "test/e2e/windows/hybrid_network.go:136 curl.exe"  # curl.exe in a Windows pod (agnhost image)
# curl.exe exec'd as the command itself, no cmd /c around it, in a Windows pod's agnhost container (upstream's
# "configurable pod DNS servers" check runs `curl.exe -k https://...` so): the exec's exit status is curl's own.
CURL_EXE_EXEC = _K + "test/e2e/windows/dns.go:107 curl.exe"
IPCONFIG = _K + "test/e2e/windows/dns.go:82 ipconfig"
CMD_ECHO_TO_FILE = _K + "test/e2e/windows/volumes.go:102 echo"  # cmd /c echo ... > file
CMD_TYPE = _K + "test/e2e/windows/volumes.go:148 type"  # cmd /c type file
CMD_DIR = _K + "test/e2e/windows/host_process.go:360 dir"  # cmd /c dir path
CMD_ECHO_USERNAME = _K + "test/e2e/windows/security_context.go:132 %username%"
CMD_WHOAMI = _K + "test/e2e/windows/host_process.go:765 whoami"
POWERSHELL_HOSTPROCESS = _K + "test/e2e/windows/host_process.go:125 powershell.exe"
POWERSHELL_BUSYBOX = _K + "test/e2e/windows/cpu_limits.go:143 powershell.exe"
HOST_BINARY_BY_PATH = _K + "test/e2e/windows/host_process.go:295 cmd.exe"
SANDBOX_MOUNT_POINT = _K + "test/e2e/windows/host_process.go:306 CONTAINER_SANDBOX_MOUNT_POINT"
TESTLIMIT = _K + "test/e2e/windows/eviction.go:124 testlimit.exe"
TESTLIMIT_CONSUME_MEM = (
    _K + "test/images/resource-consumer/utils_windows.go:39 -accepteula"
)  # ConsumeMem: testlimit.exe
TESTLIMIT_CHUNKS = _K + "test/e2e/windows/eviction.go:169 chunks"  # -d <chunk size> ... -c <chunks>
STATS_WORKING_SET = _K + "test/e2e/windows/kubelet_stats.go:121 WorkingSetBytes"
# Generic [Conformance]/[NodeConformance] tests, which SIG Windows runs on Windows nodes, run busybox's sh and
# its applets in Windows pods with the very command lines of Linux pods (busybox-w32 in the images' C:\bin).
BUSYBOX_SH_ENV = _K + "test/e2e/common/node/expansion.go:62 env"
BUSYBOX_SH_PROBE = _K + "test/e2e/common/node/container_probe.go:137 /bin/sh"
AGNHOST_DNS = _K + "test/e2e/network/dns.go:496 /agnhost"
AGNHOST_CONNECT = _K + "test/e2e/network/netpol/kubemanager.go:167 connect"
# The Windows agnhost image is built FROM upstream's Windows busybox image (test/images/agnhost/BASEIMAGE), whose
# C:\bin carries busybox-w32 with these applets (its Dockerfile_windows's BUSYBOX_EXES list: env, printenv, seq,
# sleep, dd, df, stat, ...): a Windows twin runs them with its control's very command line.
BUSYBOX_W32_APPLETS = _K + "test/images/busybox/Dockerfile_windows:23 seq"
BUSYBOX_W32_DD = _K + "test/images/busybox/Dockerfile_windows:23 dd"
# Conformance preStop/postStart exec hooks run `sh -c "curl http://..."` in the agnhost image on Windows nodes too.
PRESTOP_SH_CURL = _K + "test/e2e/common/node/lifecycle_hook.go:184 curl"
# A HostProcess pod's hostname is its node's name (compared case-insensitively), as upstream checks in one.
HOSTPROCESS_HOSTNAME = _K + "test/e2e/windows/host_process.go:108 hostname"
ACCESS_DENIED = _K + "test/e2e/windows/volumes.go:106 Access is denied."
HOSTPROCESS_IDLE = _K + "test/e2e/windows/host_process.go:648 powershell.exe"
CMD_LOCALGROUP = _K + "test/e2e/windows/host_process.go:758 localgroup"
HOSTPROCESS_SET_CONTENT = _K + "test/e2e/windows/host_process.go:168 Set-content"
# Upstream's node-side reference for the node log query (run on the Windows node over SSH; the suite runs the same
# command line on the node in a HostProcess container, as POWERSHELL_HOSTPROCESS runs PowerShell there).
GET_WIN_EVENT = _K + "test/e2e/node/kubelet.go:782 Get-WinEvent"
HOSTPROCESS_VALIDATION_SCRIPT = _K + "test/e2e/windows/host_process.go:825 powershell.exe"
HYPERV_HELLO = _K + "test/e2e/windows/hyperv.go:79 powershell.exe"
HYPERV_VM_CHECK = _K + "test/e2e/windows/hyperv.go:122 Get-ComputeProcess"
NLTEST_QUERY = _K + "test/e2e/windows/gmsa_full.go:145 nltest"
NLTEST_SC_RESET = _K + "test/e2e/windows/gmsa_full.go:153 nltest"
NLTEST_PARENTDOMAIN = _K + "test/e2e/windows/gmsa_kubelet.go:117 /PARENTDOMAIN"
DXDIAG = _K + "test/e2e/windows/device_plugin.go:118 dxdiag"
REBOOT_SCRIPT = _K + "test/e2e/windows/reboot_node.go:181 Get-WmiObject"
DELAY_SHUTDOWN = _K + "test/e2e/windows/node_shutdown.go:255 delay-shutdown"
# Windows' ping.exe (connectivity.ping_command: ping -n 1 -w 5000): upstream's e2e runs no ping in a Windows pod, so
# its evidence is recorded output (every ping-*.txt file is in a row of wincon.windows.output_forms, the forms table, read by
# tests/unit/test_windows_output_forms.py). Windows Server recordings: success in Windows Server Core ltsc2019
# containers (microsoft/Windows-Containers#420) and in a container on a Windows Server 2022 host
# (Windows-Containers#439); timeouts in a servercore ltsc2019 container (#420), a nanoserver container on Windows
# Server 2016 (docker/for-win#964) and a pod on a Windows Server 2019 node (ovn-kubernetes#576, with an unreachable
# reply); "Destination host unreachable" counted as received with exit 0,
# and "General failure", on a Windows Server LTSC VM (vmware/ansible-vsphere-gos-validation#300). The others are
# from Windows machines of unstated edition (the -n 1 -w forms, mickem/nscp#140) or Windows 11. No recording is
# from a Kubernetes pod whose ping succeeded: the success forms come from Windows Server containers outside one.
PING_OUTPUTS = (
    OUTPUTS + "ping-windows-servercore-ltsc2019-container-success.txt TTL=",
    OUTPUTS + "ping-windows-server-2022-container-success-elided.txt TTL=",
    OUTPUTS + "ping-windows-servercore-ltsc2019-container-timeout-cut.txt Request timed out.",
    OUTPUTS + "ping-windows-server-2019-pod-unreachable-timeout-cut.txt Destination host unreachable.",
    OUTPUTS + "ping-windows-server-destination-host-unreachable.txt Destination host unreachable.",
    OUTPUTS + "ping-windows-server-general-failure.txt General failure.",
)
NSLOOKUP_OUTPUT = OUTPUTS + "nslookup-windows-servercore-ltsc2022.txt Addresses"
NSLOOKUP_TIMEOUT_OUTPUT = OUTPUTS + "nslookup-windows-timeout.txt timed-out"
RESOLVE_DNSNAME_OUTPUT = OUTPUTS + "resolve-dnsname-nxdomain.txt DNS_ERROR_RCODE_NAME_ERROR"
IPCONFIG_OUTPUT = OUTPUTS + "ipconfig-all-containerd-pod-adapter-search-list.txt Search"
GET_VOLUME_OUTPUT = OUTPUTS + "get-volume-windows-server.txt FileSystem"


def windows_item(item: pytest.Item) -> bool:
    """A data-plane check on Windows (not a Linux control): the items a declaration is required for."""
    return item.get_closest_marker("dataplane") is not None and not is_control(item)


def declaration(item: pytest.Item) -> dict[str, Any] | None:
    """The item's declared Windows form (closest marker wins), or None where it declares none."""
    marker = item.get_closest_marker(MARKER)
    if marker is None:
        return None
    return {
        "same_as_control": bool(marker.kwargs.get("same_as_control", False)),
        "evidence": [str(e) for e in marker.args],
        "no_command": str(marker.kwargs.get("no_command", "")),
        "unavailable": str(marker.kwargs.get("unavailable", "")),
    }


def plan_fields(item: pytest.Item) -> dict[str, Any]:
    """The plan row's ``windows_form``: the declaration and whether the item has a control; None for items that
    need none (Linux controls, checks without a data plane)."""
    if not windows_item(item):
        return {"windows_form": None}
    declared = declaration(item)
    unrecorded = [f"{form.tool}: {form.form}" for form in output_forms.unrecorded_forms(item.nodeid)]
    return {
        "windows_form": {
            "declared": declared is not None,
            "has_control": has_control(item),
            **(declared or {}),
            "unrecorded_forms": unrecorded,
        }
    }


def unrecorded_note(item: pytest.Item) -> str:
    """For a Windows item whose verdict reads an output form with no public recording: the reason's note saying
    so (the plan's and the run's); "" otherwise."""
    return output_forms.unrecorded_note(item.nodeid) if windows_item(item) else ""


def apply(item: pytest.Item) -> None:
    """At collection: a Windows item declared ``unavailable`` is skipped with its reason (the plan agrees)."""
    declared = declaration(item) if windows_item(item) else None
    if declared and declared["unavailable"]:
        item.add_marker(pytest.mark.skip(reason=f"no Windows form with evidence: {declared['unavailable']}"))


@cache
def pinned_version() -> str:
    """The k8s.io/kubernetes version evidence must cite: that of versions.toml's default release (the newest
    supported one), whatever release a local cluster runs."""
    from wincon.localcluster import paths

    return str(paths.load_versions(paths.default_release())["kubernetes"]["version"])


@cache
def module_cache() -> Path | None:
    """The Go module cache ($GOMODCACHE, else ``go env GOMODCACHE``), or None where there is none."""
    if os.environ.get("GOMODCACHE"):
        return Path(os.environ["GOMODCACHE"])
    try:
        out = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(out.stdout.strip()) if out.stdout.strip() else None


def _line_numbers(spec: str) -> list[int]:
    numbers: list[int] = []
    for part in spec.split(","):
        low, _, high = part.partition("-")
        numbers.extend(range(int(low), int(high or low) + 1))
    return numbers


def evidence_problems(evidence: str, modcache: Path | None = None, repo: Path = REPO) -> list[str]:
    """What is wrong with one evidence string (empty when it resolves).

    Upstream references must cite the pinned version; where the module is in the Go module cache their file
    must exist, their lines be in it, and the word after the reference (if any) appear on one of them. A
    recorded output must exist under tests/data/windows-outputs/ with its ``.source``.
    """
    ref, _, word = evidence.strip().partition(" ")
    word = word.strip()
    if ref.startswith(OUTPUTS):
        path = repo / ref
        problems = [] if path.is_file() else [f"recorded output {ref} does not exist"]
        if path.is_file() and not path.with_name(path.name + ".source").is_file():
            problems.append(f"recorded output {ref} has no {path.name}.source naming its public source")
        if path.is_file() and word and word not in path.read_text():
            problems.append(f"recorded output {ref} does not contain {word!r}")
        return problems
    match = _UPSTREAM.match(ref)
    if match is None:
        return [
            f"evidence {evidence!r} is neither k8s.io/kubernetes@<version>/<path>:<line>[ <word>] nor {OUTPUTS}<file>"
        ]
    if match["version"] != pinned_version():
        return [f"evidence {ref} cites {match['version']}; versions.toml pins {pinned_version()}"]
    root = (modcache or module_cache() or Path("/nonexistent")) / f"k8s.io/kubernetes@{match['version']}"
    if not root.is_dir():
        # Not downloaded here: fetched through the project's download path (the release's Go toolchain), never
        # passed unread; where it cannot be had, that is the problem.
        from wincon.documents.upstream import ModuleUnavailable, ensure_module

        try:
            root = ensure_module(match["version"], modcache or module_cache())
        except ModuleUnavailable as exc:
            return [f"evidence {ref} cannot be checked: {exc}"]
    path = root / match["path"]
    if not path.is_file():
        return [f"evidence {ref}: {match['path']} is not in k8s.io/kubernetes@{match['version']}"]
    lines = path.read_text(errors="replace").splitlines()
    numbers = _line_numbers(match["lines"])
    if max(numbers) > len(lines):
        return [f"evidence {ref}: {match['path']} has {len(lines)} lines"]
    if word and not any(word in lines[n - 1] for n in numbers):
        return [f"evidence {ref}: {word!r} is not on line(s) {match['lines']} of {match['path']}"]
    return []


def lint_problems(tests: list[dict[str, Any]], modcache: Path | None = None) -> list[str]:
    """One line per data-plane Windows item (plan row) without a valid ``windows_form`` declaration."""
    problems: list[str] = []
    for test in tests:
        form = test.get("windows_form")
        if not form:
            continue
        nodeid = test["nodeid"]
        kinds = [form.get("same_as_control"), form.get("evidence"), form.get("no_command"), form.get("unavailable")]
        if not form.get("declared") or not any(kinds):
            problems.append(
                f"{nodeid}: no windows_form: declare same_as_control=True (it runs its control's command), the "
                "evidence of each Windows-only form, no_command=..., or unavailable=... (wincon/windows/forms.py)"
            )
            continue
        if form.get("same_as_control") and not form.get("has_control"):
            problems.append(f"{nodeid}: windows_form(same_as_control=True) but the check has no Linux control")
        for evidence in form.get("evidence") or []:
            problems.extend(f"{nodeid}: {p}" for p in evidence_problems(evidence, modcache))
    return problems


def share(tests: list[dict[str, Any]]) -> tuple[int, int, int]:
    """(runs its control's command, runs no pod command, all) over the data-plane Windows items with a control
    that run (declared unavailable ones are not counted here: they skip; :func:`unavailable_count` says how many)."""
    rows = [t["windows_form"] for t in tests if t.get("windows_form") and t["windows_form"].get("has_control")]
    rows = [r for r in rows if not r.get("unavailable")]
    same = sum(1 for r in rows if r.get("same_as_control"))
    none = sum(1 for r in rows if not r.get("same_as_control") and r.get("no_command"))
    return same, none, len(rows)


def unavailable_count(tests: list[dict[str, Any]]) -> int:
    """The data-plane Windows items with a control declared ``unavailable`` (no Windows form with evidence)."""
    return sum(
        1
        for t in tests
        if t.get("windows_form") and t["windows_form"].get("has_control") and t["windows_form"].get("unavailable")
    )


def share_line(tests: list[dict[str, Any]]) -> str:
    """The figure ``wincon coverage`` prints: over the items that run, and over all items with a Linux meaning
    (an unavailable one runs nothing on Windows, so it counts against the second figure)."""
    same, none, total = share(tests)
    skipped = unavailable_count(tests)
    percent = 100.0 * (same + none) / total if total else 0.0
    overall = 100.0 * (same + none) / (total + skipped) if total + skipped else 0.0
    return (
        f"Windows data-plane items with a Linux control that run: {total}; running their control's command: {same}, "
        f"running no pod command (the same API or kubelet read): {none}; share {percent:.1f} % (target >= 80 %); "
        f"with the {skipped} declared unavailable (no evidenced Windows form, skipped) counted as not running it: "
        f"{overall:.1f} %"
    )
