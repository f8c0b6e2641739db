"""ci/: the pipeline scripts (dry-run and with stand-in cloud tools), Prow, TestGrid, workflows, lint."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from wincon.documents.upstream import release_versions

ROOT = Path(__file__).resolve().parents[2]
CI = ROOT / "ci"
SCRIPTS = CI / "scripts"
WORKFLOWS = ROOT / ".github" / "workflows"

# Unique values that must never be printed by any script, dry run or not.
SECRETS = {
    "AKS_WINDOWS_ADMIN_PASSWORD": "Pw-8f3a91c2-$ecret!",
    "AZURE_CLIENT_SECRET": "azcs-4b1e0d77aa",
    "AZURE_FEDERATED_TOKEN": "eyJhbGciOi-federated-5c2d",
    "WINCON_ALLURE_PASSWORD": "allure-pw-93e1",
    "GITHUB_TOKEN": "ghs_0123456789abcdef",
}


def run_script(args: list[str], env: dict[str, str] | None = None, cwd: Path = ROOT, timeout: float = 60):
    full_env = {k: v for k, v in os.environ.items() if k not in ("PROW_JOB_ID", "ARTIFACTS", "KUBECONFIG")}
    full_env.update(SECRETS)
    full_env.update(env or {})
    return subprocess.run(["bash", *args], capture_output=True, text=True, env=full_env, cwd=cwd, timeout=timeout)


def assert_no_secret(result: subprocess.CompletedProcess) -> None:
    for name, value in SECRETS.items():
        assert value not in result.stdout + result.stderr, f"the value of {name} was printed"


# ----------------------------------------------------------------------------- dry runs


@pytest.mark.parametrize(
    "args",
    [
        ["aks.sh", "up", "--cluster-name", "t1", "--windows", "ltsc2022,ltsc2019", "--kubernetes-version", "1.32"],
        ["aks.sh", "down", "--cluster-name", "t1"],
        ["aks.sh", "logs", "--cluster-name", "t1"],
        ["gke.sh", "up", "--cluster-name", "t1", "--project", "p1", "--windows", "ltsc2022"],
        ["gke.sh", "down", "--cluster-name", "t1"],
        ["gke.sh", "logs", "--cluster-name", "t1"],
        ["collect-logs.sh", "--kubeconfig", "/tmp/kc"],
        ["pipeline.sh", "--cloud", "aks", "--publish", "gs://b/logs"],
        ["pipeline.sh", "--cloud", "gke", "--mode", "gate", "--kubernetes-version", "1.31"],
        ["pipeline.sh", "--cloud", "kubeconfig", "--kubeconfig", "/tmp/kc"],
    ],
    ids=lambda a: " ".join(a[:3]),
)
def test_dry_run_prints_cloud_commands_without_credentials_or_secrets(args, tmp_path):
    result = run_script(
        [str(SCRIPTS / args[0]), *args[1:], "--dry-run"],
        env={"PATH": "/usr/bin:/bin", "ARTIFACTS": str(tmp_path)},  # no az, gcloud, kubectl, wincon
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip(), "a dry run must print the commands"
    assert_no_secret(result)
    assert not (tmp_path / "results").exists(), "a dry run must not create anything"


def test_the_secret_given_to_aks_is_shown_redacted():
    result = run_script([str(SCRIPTS / "aks.sh"), "up", "--cluster-name", "t1", "--dry-run"])
    assert "--windows-admin-password '<redacted:AKS_WINDOWS_ADMIN_PASSWORD>'" in result.stdout


def dry_pipeline(*args: str, env: dict[str, str] | None = None, tmp_path: Path) -> list[str]:
    result = run_script(
        [str(SCRIPTS / "pipeline.sh"), "--artifacts", str(tmp_path / "a"), "--dry-run", *args],
        env={"WINCON_RUN_ID": "r1", "TMPDIR": str(tmp_path), **(env or {})},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def index_of(lines: list[str], start: str) -> int:
    hits = [n for n, line in enumerate(lines) if line.startswith(start)]
    assert hits, f"no command starting with {start!r} in:\n" + "\n".join(lines)
    return hits[0]


def test_nightly_aks_runs_every_step_in_order(tmp_path):
    lines = dry_pipeline("--cloud", "aks", "--publish", "gs://dash/logs", "--job", "j1", tmp_path=tmp_path)
    a, kc = tmp_path / "a", tmp_path / "wincon-kubeconfig-wincon-r1"
    order = [
        index_of(lines, "az aks create --resource-group wincon-r1-rg --name wincon-r1"),
        # by default a Windows Server 2025 pool: AKS's Windows Server 2022 pools end at Kubernetes 1.34
        index_of(lines, "az aks nodepool add --resource-group wincon-r1-rg --cluster-name wincon-r1 --name win25"),
        index_of(lines, f"az aks get-credentials --resource-group wincon-r1-rg --name wincon-r1 --file {kc}"),
        index_of(lines, f"wincon prepull --kubeconfig {kc}"),
        index_of(
            lines,
            f"pytest --kubeconfig {kc} suites --run-id r1-parallel --results-dir {a}/results/parallel "
            "--results-context parallel -n 4 -m 'not serial and not disruptive'",
        ),
        index_of(
            lines,
            f"pytest --kubeconfig {kc} suites --run-id r1-serial --results-dir {a}/results/serial "
            "--results-context serial -n 0 -m 'serial or disruptive'",
        ),
        index_of(lines, f"wincon publish {a}/results/parallel --to gs://dash/logs/j1"),
        index_of(lines, f"wincon publish {a}/results/serial --to gs://dash/logs/j1-serial"),
        index_of(lines, f"kubectl --kubeconfig {kc} get nodes -o wide"),
        index_of(lines, "az group delete --name wincon-r1-rg --yes --no-wait"),
    ]
    assert order == sorted(order), "\n".join(lines)
    assert not any(str(a) in line for line in lines if "kubeconfig" in line.split()[-1:]), "kubeconfig in artifacts"


def test_nightly_aks_ltsc2025_creates_a_windows_server_2025_pool(tmp_path):
    lines = dry_pipeline("--cloud", "aks", "--windows", "ltsc2025", "--kubernetes-version", "1.37", tmp_path=tmp_path)
    pool = lines[
        index_of(lines, "az aks nodepool add --resource-group wincon-r1-rg --cluster-name wincon-r1 --name win25")
    ]
    assert "--os-type Windows --os-sku Windows2025" in pool and "--kubernetes-version 1.37" in pool
    assert not any("Windows2022" in line for line in lines)
    assert index_of(lines, "az group delete --name wincon-r1-rg") > index_of(lines, "pytest")


def test_the_release_gate_offers_windows_server_2025():
    inputs = workflows()["release-gate.yml"][True]["workflow_dispatch"]["inputs"]  # YAML 1.1 reads "on" as True
    assert "ltsc2025" in inputs["windows"]["options"]


def test_nightly_gke_creates_a_windows_ltsc_containerd_pool(tmp_path):
    lines = dry_pipeline("--cloud", "gke", "--windows", "ltsc2022", tmp_path=tmp_path, env={"GKE_PROJECT": "p"})
    pool = lines[index_of(lines, "gcloud container node-pools create win-ltsc2022")]
    assert "--image-type WINDOWS_LTSC_CONTAINERD --windows-os-version ltsc2022" in pool
    assert index_of(lines, "gcloud container clusters delete wincon-r1") > index_of(lines, "pytest")


def test_gate_runs_the_required_list_alone_then_wincon_gate(tmp_path):
    lines = dry_pipeline(
        "--cloud",
        "kubeconfig",
        "--kubeconfig",
        "/k",
        "--mode",
        "gate",
        "--kubernetes-version",
        "v1.31.4",
        tmp_path=tmp_path,
    )
    a = tmp_path / "a"
    listing = index_of(lines, f"python3 {SCRIPTS}/required_tests.py --kubernetes-version 1.31 > {a}/required-tests.txt")
    tests = index_of(lines, "pytest --kubeconfig /k --run-id r1-gate")
    assert f"-n 0 @{a}/required-tests.txt" in lines[tests]
    gate = index_of(lines, f"wincon gate {a}/results/gate --kubernetes-version 1.31")
    assert listing < tests < gate
    assert not any(line.startswith(("az ", "gcloud ")) for line in lines), "--cloud kubeconfig creates nothing"


def test_gate_on_a_pre_release_judges_its_minor(tmp_path):
    lines = dry_pipeline(
        "--cloud",
        "kubeconfig",
        "--kubeconfig",
        "/k",
        "--mode",
        "gate",
        "--kubernetes-version",
        "v1.38.0-beta.0",
        tmp_path=tmp_path,
    )
    a = tmp_path / "a"
    index_of(lines, f"python3 {SCRIPTS}/required_tests.py --kubernetes-version 1.38 > {a}/required-tests.txt")
    index_of(lines, f"wincon gate {a}/results/gate --kubernetes-version 1.38")


@pytest.mark.parametrize(
    "args, message",
    [
        (["--cloud", "azure"], "--cloud 'azure' is not aks, gke or kubeconfig"),
        ([], "--cloud is required"),
        (["--cloud", "kubeconfig"], "--cloud kubeconfig needs --kubeconfig FILE"),
        (["--cloud", "aks", "--mode", "gate"], "--mode gate needs --kubernetes-version"),
        (["--cloud", "aks", "--workers", "four"], "--workers 'four' is not a number"),
        (
            ["--cloud", "aks", "--windows", "ltsc2019", "--kubernetes-version", "1.33"],
            "does not offer Windows Server 2019",
        ),
        (
            ["--cloud", "aks", "--windows", "ltsc2022", "--kubernetes-version", "1.35"],
            "does not offer Windows Server 2022",
        ),
        (["--cloud", "gke", "--windows", "ltsc2025"], "GKE does not offer Windows version 'ltsc2025'"),
        (
            ["--cloud", "aks", "--mode", "gate", "--kubernetes-version", "v1.38.0-beta.0"],
            "is a pre-release, which aks does",
        ),
        (
            ["--cloud", "kubeconfig", "--kubeconfig", "/k", "--mode", "gate", "--kubernetes-version", "1.38-beta"],
            "--mode gate needs",
        ),
    ],
)
def test_bad_usage_is_one_clear_error(args, message, tmp_path):
    result = run_script([str(SCRIPTS / "pipeline.sh"), "--dry-run", "--artifacts", str(tmp_path), *args])
    assert result.returncode == 4, result.stdout + result.stderr
    assert message in result.stderr and "fix:" in result.stderr


# ----------------------------------------------------------------------------- real runs with stand-in tools

STANDIN = r"""#!/usr/bin/env bash
# Records its call; behaves as the rules file says: lines "substring|exit code|stdout|sleep seconds".
tool=$(basename "$0")
line="$tool $*"
printf '%s\n' "$line" >> "$STANDIN_CALLS"
results=""
prev=""
for a in "$@"; do
  [[ "$prev" == --results-dir ]] && results=$a
  prev=$a
done
if [[ -n "$results" ]]; then
  mkdir -p "$results"
  echo '{"timestamp": 1}' > "$results/started.json"
  echo '{"timestamp": 2, "passed": true, "metadata": {"kubernetes-version": "v1.31.2", "windows-builds": "20348"}}' \
    > "$results/finished.json"
fi
while IFS='|' read -r match rc out pause; do
  [[ -n "$match" && "$line" == *"$match"* ]] || continue
  [[ -n "$out" ]] && printf '%s\n' "$out"
  if [[ -n "$pause" ]]; then
    sleep "$pause" &
    trap 'kill $! 2>/dev/null; exit 143' TERM
    wait $!
  fi
  exit "$rc"
done < "$STANDIN_RULES"
exit 0
"""


@pytest.fixture()
def standins(tmp_path):
    """az, gcloud, kubectl, wincon and pytest stand-ins on PATH, with a rules file and a call log."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("az", "gcloud", "kubectl", "wincon", "pytest"):
        path = bin_dir / tool
        path.write_text(STANDIN)
        path.chmod(0o755)
    rules = tmp_path / "rules.txt"
    rules.write_text("az group show|0|Succeeded|\ngcloud container clusters describe|0|RUNNING|\n")
    calls = tmp_path / "calls.txt"
    calls.write_text("")
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "STANDIN_RULES": str(rules),
        "STANDIN_CALLS": str(calls),
        "WINCON_RUN_ID": "r2",
        "TMPDIR": str(tmp_path),
    }

    class Standins:
        def rule(self, match: str, rc: int = 0, out: str = "", pause: str = "") -> None:
            with rules.open("a") as handle:
                handle.write(f"{match}|{rc}|{out}|{pause}\n")

        def calls(self) -> list[str]:
            return calls.read_text().splitlines()

        def pipeline(self, *args: str, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
            return run_script(
                [str(SCRIPTS / "pipeline.sh"), "--artifacts", str(tmp_path / "a"), *args],
                env={**env, **(extra_env or {})},
            )

    return Standins()


def called(calls: list[str], start: str) -> bool:
    return any(c.startswith(start) for c in calls)


def test_failed_tests_still_publish_collect_logs_and_tear_down(standins, tmp_path):
    standins.rule("--results-context parallel", rc=1)
    result = standins.pipeline("--cloud", "aks", "--publish", str(tmp_path / "pub"), "--job", "j")
    assert result.returncode == 1, result.stderr
    calls = standins.calls()
    assert called(calls, "pytest --kubeconfig") and any("--results-context serial" in c for c in calls)
    assert called(calls, f"wincon publish {tmp_path}/a/results/parallel --to {tmp_path}/pub/j")
    assert called(calls, f"wincon publish {tmp_path}/a/results/serial --to {tmp_path}/pub/j-serial")
    assert called(calls, "kubectl --kubeconfig") and called(calls, "az aks show")
    assert calls[-1] == "az group delete --name wincon-r2-rg --yes --no-wait"
    assert (tmp_path / "a" / "cluster" / "nodes.txt").exists()
    assert_no_secret(result)


def test_a_cluster_that_cannot_be_created_is_an_infrastructure_error_and_is_still_deleted(standins):
    standins.rule("az aks create", rc=1)
    result = standins.pipeline("--cloud", "aks")
    assert result.returncode == 3
    calls = standins.calls()
    assert not called(calls, "pytest") and not called(calls, "wincon prepull")
    assert calls[-1].startswith("az group delete --name wincon-r2-rg")


def test_a_failed_prepull_stops_before_the_tests_with_exit_3(standins):
    standins.rule("wincon prepull", rc=3)
    result = standins.pipeline("--cloud", "gke", extra_env={"GKE_PROJECT": "p"})
    assert result.returncode == 3
    calls = standins.calls()
    assert not called(calls, "pytest")
    assert calls[-1].startswith("gcloud container clusters delete wincon-r2")


def test_no_serial_tests_is_not_a_failure_but_no_tests_at_all_is(standins):
    standins.rule("--results-context serial", rc=5)
    assert standins.pipeline("--cloud", "aks").returncode == 0
    standins.rule("--results-context parallel", rc=5)
    assert standins.pipeline("--cloud", "aks").returncode == 5


def test_a_failed_publish_is_exit_9_when_the_tests_passed(standins, tmp_path):
    standins.rule("wincon publish", rc=9)
    result = standins.pipeline("--cloud", "aks", "--publish", "gs://b/logs")
    assert result.returncode == 9
    assert standins.calls()[-1].startswith("az group delete")


def test_sigterm_during_the_tests_tears_down_at_once_and_exits_2(standins, tmp_path):
    standins.rule("--results-context parallel", rc=0, pause="60")
    env = {
        **os.environ,
        **SECRETS,
        "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "STANDIN_RULES": str(tmp_path / "rules.txt"),
        "STANDIN_CALLS": str(tmp_path / "calls.txt"),
        "WINCON_RUN_ID": "r3",
        "TMPDIR": str(tmp_path),
    }
    with (tmp_path / "out.txt").open("w") as out, (tmp_path / "err.txt").open("w") as err:
        proc = subprocess.Popen(
            ["bash", str(SCRIPTS / "pipeline.sh"), "--artifacts", str(tmp_path / "a"), "--cloud", "aks"],
            env=env,
            stdout=out,
            stderr=err,
        )
        deadline = time.monotonic() + 20
        while not any("--results-context parallel" in c for c in standins.calls()):
            assert time.monotonic() < deadline, "the parallel tests never started"
            time.sleep(0.1)
        signalled = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=50)
    # Not after the 60 s the stand-in pytest would take: the signal is handled while the step runs.
    assert time.monotonic() - signalled < 30
    assert rc == 2, (tmp_path / "err.txt").read_text()
    assert "interrupted" in (tmp_path / "err.txt").read_text()
    assert standins.calls()[-1].startswith("az group delete --name wincon-r3-rg")


def test_gate_exit_code_is_the_verdict(standins, tmp_path):
    required = tmp_path / "required.txt"
    standins.rule("wincon gate", rc=11)
    # required_tests.py collects the real suites; a copy of the scripts gets a stand-in that lists one test
    scripts = tmp_path / "ci" / "scripts"
    shutil.copytree(SCRIPTS, scripts)
    (scripts / "required_tests.py").write_text("print('suites/api/test_x.py::test_y')\n")
    result = run_script(
        [
            str(scripts / "pipeline.sh"),
            "--artifacts",
            str(tmp_path / "a"),
            "--cloud",
            "kubeconfig",
            "--kubeconfig",
            str(required),
            "--mode",
            "gate",
            "--kubernetes-version",
            "1.31",
        ],
        env={
            "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}",
            "STANDIN_RULES": str(tmp_path / "rules.txt"),
            "STANDIN_CALLS": str(tmp_path / "calls.txt"),
            "WINCON_RUN_ID": "r4",
        },
    )
    assert result.returncode == 11, result.stderr
    calls = standins.calls()
    assert any(c.startswith("pytest") and f"@{tmp_path}/a/required-tests.txt" in c for c in calls)
    assert (tmp_path / "a" / "required-tests.txt").read_text() == "suites/api/test_x.py::test_y\n"


def test_under_prow_the_run_profile_reaches_metadata_json(standins, tmp_path):
    artifacts = tmp_path / "a"
    result = standins.pipeline("--cloud", "aks", extra_env={"PROW_JOB_ID": "123", "ARTIFACTS": str(artifacts)})
    assert result.returncode == 0, result.stderr
    metadata = json.loads((artifacts / "metadata.json").read_text())
    assert metadata == {"kubernetes-version": "v1.31.2", "windows-builds": "20348"}


def test_collect_logs_keeps_going_when_kubectl_fails(standins, tmp_path):
    standins.rule("get nodes -o name", out="node/win-1")
    standins.rule("get --raw", rc=1)
    out = tmp_path / "logs"
    result = run_script(
        [str(SCRIPTS / "collect-logs.sh"), "--kubeconfig", "/k", "--artifacts", str(out)],
        env={
            "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}",
            "STANDIN_RULES": str(tmp_path / "rules.txt"),
            "STANDIN_CALLS": str(tmp_path / "calls.txt"),
        },
    )
    assert result.returncode == 0, result.stderr
    assert "logs of 1 nodes saved" in result.stderr, result.stderr
    assert (out / "nodes" / "win-1-describe.txt").exists() and (out / "nodes" / "win-1-kubelet.log").exists()
    assert any("/api/v1/nodes/win-1/proxy/logs/?query=kubelet" in c for c in standins.calls())


def test_prow_metadata_flattens_values_for_testgrid(tmp_path):
    finished = tmp_path / "finished.json"
    finished.write_text(json.dumps({"metadata": {"cni": "azure-cni", "verdicts": {"passed": 3}, "n": 2}}))
    target = tmp_path / "out" / "metadata.json"
    result = subprocess.run([sys.executable, str(SCRIPTS / "prow_metadata.py"), str(finished), str(target)])
    assert result.returncode == 0
    assert json.loads(target.read_text()) == {"cni": "azure-cni", "verdicts": {"passed": "3"}, "n": "2"}


def test_required_tests_rejects_an_id_no_suite_test_carries(tmp_path):
    pytest.importorskip("wincon.results.gate")
    required = tmp_path / "required.yaml"
    required.write_text(
        "version: 1\nkubernetes:\n  '1.31':\n    tests:\n"
        "      - {id: 00000000-0000-4000-8000-000000000000, name: no such test}\n"
    )
    result = subprocess.run(
        [
            sys.executable,
            str(SCRIPTS / "required_tests.py"),
            "--kubernetes-version",
            "1.31",
            "--required",
            str(required),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert result.returncode == 4, result.stderr
    assert "00000000-0000-4000-8000-000000000000" in result.stderr and "fix:" in result.stderr


# ----------------------------------------------------------------------------- Prow, TestGrid, workflows


def prow_jobs() -> list[dict]:
    jobs = []
    for path in sorted((CI / "prow").glob("*.yaml")):
        jobs.extend(yaml.safe_load(path.read_text()).get("periodics", []))
    return jobs


def load_testgrid() -> dict:
    return yaml.safe_load((CI / "testgrid" / "wincon.yaml").read_text())


def test_prow_jobs_have_unique_names_decoration_and_testgrid_tabs():
    jobs = prow_jobs()
    names = [j["name"] for j in jobs]
    assert len(names) == len(set(names)) and len(names) >= 4
    dashboards = {d["name"] for d in load_testgrid()["dashboards"]}
    groups = {g["name"]: g for g in load_testgrid()["test_groups"]}
    for job in jobs:
        assert job["decorate"] is True, job["name"]
        assert job["annotations"]["testgrid-dashboards"] in dashboards, job["name"]
        group = groups.get(job["name"])
        assert group, f"no TestGrid test group for {job['name']}"
        bucket = job["decoration_config"]["gcs_configuration"]["bucket"]
        assert group["gcs_prefix"] == f"{bucket}/logs/{job['name']}"


@pytest.mark.parametrize("job", prow_jobs(), ids=lambda j: j["name"])
def test_each_prow_job_command_runs_in_dry_run(job, tmp_path):
    container = job["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container.get("env", [])}
    args = [a.replace("$(WINCON_GATE_K8S_VERSION)", env.get("WINCON_GATE_K8S_VERSION", "")) for a in container["args"]]
    assert args[args.index("--job") + 1] == job["name"], "the published job name must be the Prow job's"
    result = run_script(
        [str(ROOT / container["command"][0]), "--dry-run", *args],
        env={**env, "ARTIFACTS": str(tmp_path), "PROW_JOB_ID": "1", "PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    assert "pytest" in result.stdout
    assert_no_secret(result)


def test_every_testgrid_tab_points_at_a_defined_group_with_wincon_column_headers():
    config = load_testgrid()
    groups = {g["name"]: g for g in config["test_groups"]}
    assert set(config["dashboard_groups"][0]["dashboard_names"]) == {d["name"] for d in config["dashboards"]}
    for dashboard in config["dashboards"]:
        for tab in dashboard["dashboard_tab"]:
            assert tab["test_group_name"] in groups, tab["name"]
    for group in groups.values():
        headers = [h["configuration_value"] for h in group["column_header"]]
        assert {"kubernetes-version", "windows-builds", "cni"} <= set(headers)


def workflows() -> dict[str, dict]:
    return {p.name: yaml.safe_load(p.read_text()) for p in sorted(WORKFLOWS.glob("*.yml"))}


def test_the_three_workflows_exist_and_always_tear_down():
    flows = workflows()
    assert {"nightly-aks.yml", "nightly-gke.yml", "release-gate.yml"} <= set(flows)
    for name, flow in flows.items():
        for job_id, job in flow["jobs"].items():
            steps = job["steps"]
            runs = [s.get("run", "") for s in steps]
            if not any("pipeline.sh" in r for r in runs):
                continue
            down = [s for s in steps if "down --cluster-name" in s.get("run", "")]
            assert down and down[0].get("if") == "always()", f"{name}/{job_id}: no always() teardown step"
            assert steps.index(down[0]) > next(i for i, r in enumerate(runs) if "pipeline.sh" in r)


def supported_minors() -> set[str]:
    """The released minors versions.toml builds (1.35, 1.36, 1.37): the nightlies' minors."""
    return {".".join(v.lstrip("v").split(".")[:2]) for v in release_versions() if "-" not in v}


def newest_pre_release() -> str:
    pre = [v for v in release_versions() if "-" in v]
    assert pre, "versions.toml names no pre-release of the next minor"
    return pre[-1]


def test_nightly_workflows_publish_to_the_groups_testgrid_reads_one_per_supported_minor():
    groups = {g["name"] for g in load_testgrid()["test_groups"]}
    for flow, job_id in (("nightly-aks.yml", "aks"), ("nightly-gke.yml", "gke")):
        job = workflows()[flow]["jobs"][job_id]
        assert job["env"]["JOB_NAME"] == "${{ matrix.job }}"
        entries = job["strategy"]["matrix"]["include"]
        for entry in entries:
            assert entry["job"] in groups and f"{entry['job']}-serial" in groups, entry
        ltsc2022 = [e["k8s-version"] for e in entries if e["windows"] == "ltsc2022"]
        # AKS: no Windows Server 2022 lane (its WS2022 pools end at 1.34, older than every supported minor)
        assert sorted(ltsc2022) == ([] if flow == "nightly-aks.yml" else sorted(supported_minors())), flow
        ltsc2025 = [e["k8s-version"] for e in entries if e["windows"] == "ltsc2025"]
        # AKS: a Windows Server 2025 lane per minor; GKE offers no 2025 pool (gke.sh refuses ltsc2025)
        assert sorted(ltsc2025) == (sorted(supported_minors()) if flow == "nightly-aks.yml" else []), flow
        assert len({e["job"] for e in entries}) == len(entries)


def test_prow_has_a_nightly_per_cloud_and_supported_minor_and_gates_the_newest_pre_release():
    jobs = {j["name"]: j for j in prow_jobs()}
    for minor in supported_minors():  # Windows Server 2022 on GKE only (AKS's WS2022 pools end at 1.34)
        job = jobs[f"ci-wincon-gke-ltsc2022-{minor.replace('.', '-')}"]
        args = job["spec"]["containers"][0]["args"]
        assert args[args.index("--kubernetes-version") + 1] == minor and args[args.index("--cloud") + 1] == "gke"
        assert job["annotations"]["testgrid-tab-name"] == f"prow-gke-ltsc2022-{minor}"
    assert not [name for name in jobs if name.startswith("ci-wincon-aks-ltsc2022")]
    for minor in supported_minors():  # Windows Server 2025 on AKS only
        job = jobs[f"ci-wincon-aks-ltsc2025-{minor.replace('.', '-')}"]
        args = job["spec"]["containers"][0]["args"]
        assert args[args.index("--windows") + 1] == "ltsc2025" and args[args.index("--kubernetes-version") + 1] == minor
        assert job["annotations"]["testgrid-tab-name"] == f"prow-aks-ltsc2025-{minor}"
    assert not [name for name in jobs if name.startswith("ci-wincon-gke-ltsc2025")]
    gate = jobs["ci-wincon-release-gate"]
    container = gate["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert env["WINCON_GATE_K8S_VERSION"] == newest_pre_release() == "v1.38.0-beta.0"
    args = container["args"]
    assert args[args.index("--mode") + 1] == "gate" and args[args.index("--cloud") + 1] == "kubeconfig"
    assert args[args.index("--kubernetes-version") + 1] == "$(WINCON_GATE_K8S_VERSION)"


def test_scripts_referenced_by_workflows_and_prow_exist_and_are_executable():
    texts = [p.read_text() for p in WORKFLOWS.glob("*.yml")] + [p.read_text() for p in (CI / "prow").glob("*.yaml")]
    referenced = {m for text in texts for m in re.findall(r'ci/scripts/(?:"\$CLOUD"|[\w-]+)\.(?:sh|py)', text)}
    assert {"ci/scripts/pipeline.sh", "ci/scripts/prow.sh", 'ci/scripts/"$CLOUD".sh'} <= referenced
    for ref in referenced:
        for path in [ROOT / ref.replace('"$CLOUD"', cloud) for cloud in ("aks", "gke")]:
            assert path.exists() and os.access(path, os.X_OK), ref


def test_shellcheck_and_actionlint_pass():
    result = subprocess.run(["bash", str(CI / "lint.sh")], capture_output=True, text=True, timeout=900)
    if result.returncode == 3:
        pytest.skip("neither install path for shellcheck/actionlint works here: " + result.stderr.strip()[-300:])
    assert result.returncode == 0, result.stdout + result.stderr


def test_required_tests_lists_collectable_node_ids_for_a_minor_of_the_real_list():
    pytest.importorskip("wincon.results.gate")
    required = yaml.safe_load((ROOT / "gating" / "required.yaml").read_text())
    minor = sorted(required["kubernetes"], key=lambda v: tuple(int(p) for p in v.split(".")))[-1]
    result = subprocess.run(
        [sys.executable, str(SCRIPTS / "required_tests.py"), "--kubernetes-version", minor],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    node_ids = result.stdout.splitlines()
    assert node_ids and all(n.startswith("suites/") and "::" in n for n in node_ids)
    assert all((ROOT / n.split("::")[0]).is_file() for n in node_ids)


@pytest.mark.parametrize("script", ["pipeline.sh", "aks.sh", "gke.sh"])
def test_the_old_k8s_version_spelling_still_works_and_says_which_to_use(script, tmp_path):
    """--k8s-version was the scripts' spelling until wincon's options took one name per concept (docs/options.md):
    still taken for a release, with one warning line."""
    head = ["--cloud", "aks", "--windows", "ltsc2025"] if script == "pipeline.sh" else ["up", "--cluster-name", "t1"]
    if script == "gke.sh":
        head += ["--project", "p1", "--windows", "ltsc2022"]
    args = [str(SCRIPTS / script), *head, "--dry-run", "--k8s-version", "1.35"]
    old = run_script(args, env={"WINCON_RUN_ID": "r1", "TMPDIR": str(tmp_path), "ARTIFACTS": str(tmp_path / "a")})
    new = run_script(
        [a if a != "--k8s-version" else "--kubernetes-version" for a in args],
        env={"WINCON_RUN_ID": "r1", "TMPDIR": str(tmp_path), "ARTIFACTS": str(tmp_path / "a")},
    )
    assert old.returncode == new.returncode == 0, old.stderr
    assert old.stdout == new.stdout and "1.35" in old.stdout
    warning = f"{script}: warning: --k8s-version is deprecated, use --kubernetes-version"
    assert warning in old.stderr and warning not in new.stderr
