"""The framework against the local cluster: isolation under xdist, cleanup on every kind of stop,
least privilege, and no credentials in what a run writes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from wincon.cluster.client import load_api_client
from wincon.cluster.namespaces import RUN_ID, SELECTOR
from wincon.commandline.errors import ExitCode
from wincon.localcluster import paths

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def core(kubeconfig):
    return client.CoreV1Api(load_api_client(str(kubeconfig)))


def run_namespaces(core, run_id):
    """Namespaces of a run that are not already on their way out."""
    items = core.list_namespace(label_selector=f"{SELECTOR},{RUN_ID}={run_id}").items
    return [ns.metadata.name for ns in items if not (ns.status and ns.status.phase == "Terminating")]


def wait_until(predicate, timeout=30.0, interval=0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return predicate()


def make_suite(tmp_path: Path, files: dict[str, str]) -> Path:
    suites = tmp_path / "suites"
    suites.mkdir()
    for name, body in files.items():
        (suites / name).write_text(textwrap.dedent(body))
    return suites


def pytest_cmd(suites: Path, kubeconfig, run_id: str, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pytest",
        str(suites),
        "--kubeconfig",
        str(kubeconfig),
        "--run-id",
        run_id,
        "-p",
        "no:cacheprovider",
        "--results-dir",
        str(suites.parent / "results"),
        *extra,
    ]


ISOLATION = """
import uuid
import pytest
from kubernetes import client

@pytest.mark.api
@pytest.mark.test_id("{tid}")
@pytest.mark.parametrize("n", range(4))
def test_alone(wincon, namespace, n):
    core = client.CoreV1Api(wincon.api_client)
    core.create_namespaced_config_map(namespace, {{"metadata": {{"name": f"probe-{{n}}"}}}})
    names = [c.metadata.name for c in core.list_namespaced_config_map(namespace).items if c.metadata.name.startswith("probe")]
    assert f"probe-{{n}}" in names
    with open("{out}", "a") as f:
        f.write(namespace + "\\n")
"""


def test_namespaces_are_unique_across_four_workers_and_removed_after(tmp_path, kubeconfig, core):
    out = tmp_path / "namespaces.txt"
    files = {
        f"test_m{i}.py": ISOLATION.format(tid=f"00000000-0000-4000-8000-00000000000{i}", out=out) for i in range(4)
    }
    suites = make_suite(tmp_path, files)
    run_id = f"iso{int(time.time())}"
    proc = subprocess.run(
        pytest_cmd(suites, kubeconfig, run_id, "-n", "4", "-q"), capture_output=True, text=True, cwd=REPO, timeout=300
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "16 passed" in proc.stdout
    used = out.read_text().split()
    # One namespace per module per worker that ran it: never shared between two workers.
    workers = {name.split("-")[-2] for name in used}
    assert len(workers) > 1, f"all tests ran on one worker: {used}"
    assert all(name.startswith("wincon-m") and len(name) <= 63 for name in used)
    assert wait_until(lambda: not run_namespaces(core, run_id)), run_namespaces(core, run_id)


SLEEPER = """
import time
import pytest

@pytest.mark.api
@pytest.mark.test_id("00000000-0000-4000-8000-0000000000aa")
def test_sleeps(namespace):
    time.sleep(120)
"""


def start_sleeper(tmp_path, kubeconfig, core, run_id):
    suites = make_suite(tmp_path, {"test_sleep.py": SLEEPER})
    proc = subprocess.Popen(
        pytest_cmd(suites, kubeconfig, run_id, "-q"),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    created = wait_until(lambda: run_namespaces(core, run_id), timeout=60)
    if not created:
        proc.kill()
        pytest.fail(f"the sleeper never created its namespace: {proc.communicate()[0][-2000:]}")
    return proc, created


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_run_deletes_its_namespaces(tmp_path, kubeconfig, core, sig):
    run_id = f"sig{sig.value}x{int(time.time())}"
    proc, created = start_sleeper(tmp_path, kubeconfig, core, run_id)
    os.kill(proc.pid, sig)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == ExitCode.INTERRUPTED, output[-2000:]
    assert wait_until(lambda: not run_namespaces(core, run_id)), f"left behind: {run_namespaces(core, run_id)}"


def test_killed_run_is_reaped_by_cleanup(tmp_path, kubeconfig, core):
    run_id = f"kill{int(time.time())}"
    proc, created = start_sleeper(tmp_path, kubeconfig, core, run_id)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert run_namespaces(core, run_id) == created, "SIGKILL leaves no chance to clean: the namespace must remain"
    cleanup = subprocess.run(
        [sys.executable, "-m", "wincon", "cleanup", "--kubeconfig", str(kubeconfig)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert cleanup.returncode == 0, cleanup.stderr
    if created[0] not in cleanup.stdout:
        # Every run reaps dead runs' namespaces as it starts (the same reap): one that another test started
        # against this cluster in between took it first. It must be on its way out then, not left behind.
        assert not run_namespaces(core, run_id), f"cleanup left the killed run's namespace: {cleanup.stdout}"
    assert wait_until(lambda: not run_namespaces(core, run_id))


# --- least privilege ---


RBAC_SUITE = """
import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

@pytest.mark.api
@pytest.mark.test_id("00000000-0000-4000-8000-0000000000bb")
def test_can_do_its_job(wincon, namespace):
    core = client.CoreV1Api(wincon.api_client)
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "x"}})
    assert wincon.profile.windows_nodes

@pytest.mark.api
@pytest.mark.test_id("00000000-0000-4000-8000-0000000000cc")
def test_cannot_touch_rbac(wincon):
    rbac = client.RbacAuthorizationV1Api(wincon.api_client)
    with pytest.raises(ApiException) as err:
        rbac.create_cluster_role({"metadata": {"name": "wincon-escalate"}, "rules": []})
    assert err.value.status == 403
"""


def runner_kubeconfig(kubeconfig: Path, tmp_path: Path) -> Path:
    """Apply manifests/rbac/runner.yaml and write a kubeconfig for its service account's token."""
    api = load_api_client(str(kubeconfig))
    core = client.CoreV1Api(api)
    try:
        core.create_namespace({"metadata": {"name": "wincon-system"}})
    except client.exceptions.ApiException as exc:
        if exc.status != 409:
            raise
    from kubernetes import utils

    for doc in yaml.safe_load_all((REPO / "manifests/rbac/runner.yaml").read_text()):
        try:
            utils.create_from_dict(api, doc)
        except utils.FailToCreateError as exc:
            if not all(e.status == 409 for e in exc.api_exceptions):
                raise
    token = core.create_namespaced_service_account_token(
        "wincon-runner", "wincon-system", {"spec": {"expirationSeconds": 3600}}
    ).status.token
    config = yaml.safe_load(kubeconfig.read_text())
    config["users"] = [{"name": "wincon-runner", "user": {"token": token}}]
    for ctx in config["contexts"]:
        ctx["context"]["user"] = "wincon-runner"
    path = tmp_path / "runner.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path, token


def test_suite_runs_under_the_least_privilege_identity_and_leaks_no_token(tmp_path, kubeconfig):
    restricted, token = runner_kubeconfig(Path(kubeconfig), tmp_path)
    suites = make_suite(tmp_path, {"test_rbac.py": RBAC_SUITE})
    proc = subprocess.run(
        pytest_cmd(suites, restricted, f"rbac{int(time.time())}", "-rA"),
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "2 passed" in proc.stdout
    written = [p for p in (tmp_path / "results").rglob("*") if p.is_file()]
    assert written, "the run wrote no results"
    for text in [proc.stdout, proc.stderr] + [p.read_text(errors="replace") for p in written]:
        assert token not in text
        assert token[:40] not in text


def test_profile_command_reads_the_simulated_topology(kubeconfig):
    proc = subprocess.run(
        [sys.executable, "-m", "wincon", "profile", "--json", "--kubeconfig", str(kubeconfig)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    profile = json.loads(proc.stdout)
    assert profile["k8s_version"] == paths.load_versions()["kubernetes"]["version"].lstrip("v")
    assert set(profile["windows_os_versions"]) >= {"ltsc2022", "ltsc2025"}
    assert profile["data_plane"] is False and profile["simulated"] is True
    assert profile["cloud"] == "kwok"
