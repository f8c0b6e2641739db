"""The run's context: whether this is a suite run, the cluster profile, the run id, and ``WinconContext``
(API client, image catalog, namespaces) that fixtures use; the start of a run (profile loading, reaping
leftovers, pre-pulling) and its end (sweeping this run's namespaces)."""

from __future__ import annotations

import ctypes
import json
import os
import secrets
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from wincon.clusterinfo import nodes
from wincon.clusterinfo.profile import ClusterProfile
from wincon.commandline.errors import InfrastructureError
from wincon.documents import limitations as limitations_mod
from wincon.localcluster import hints
from wincon.session import options

PROFILE_KEY = pytest.StashKey[ClusterProfile]()
RUN_ID_KEY = pytest.StashKey[str]()
CONTEXT_KEY = pytest.StashKey["WinconContext"]()
LIMITATIONS_KEY = pytest.StashKey[dict]()
NAMESPACES_KEY = pytest.StashKey[list[str]]()  # per item (and module): namespaces its fixtures created
IMAGE_REFUSALS_KEY = pytest.StashKey[list]()  # imageverify Findings that cannot run (image, node, isolation)
IMAGES_NOTE_KEY = pytest.StashKey[str]()  # what the image preflight did, for the run's header
LEASE_NOTE_KEY = pytest.StashKey[str]()  # the run's Lease (or why it has none), for the run's header


# ----------------------------------------------------------------------------- accessors


def get_profile(config: pytest.Config) -> ClusterProfile | None:
    return config.stash.get(PROFILE_KEY, None)


def get_run_id(config: pytest.Config) -> str:
    return config.stash.get(RUN_ID_KEY, "")


def get_context(config: pytest.Config) -> WinconContext | None:
    return config.stash.get(CONTEXT_KEY, None)


def get_limitations(config: pytest.Config) -> dict[str, Any] | None:
    return config.stash.get(LIMITATIONS_KEY, None)


def get_image_refusals(config: pytest.Config) -> list[Any]:
    return config.stash.get(IMAGE_REFUSALS_KEY, [])


def is_suite_run(config: pytest.Config) -> bool:
    """True when this run checks a cluster (paths under suites/, or --wincon), not the project's own tests."""
    if config.getoption("wincon_force", False):
        return True
    if config.getoption("wincon_lint_out", None):
        return False
    for arg in config.args:
        path = Path(arg.split("::", 1)[0]).resolve()
        if "suites" in path.parts:
            return True
    return False


def collect_only(config: pytest.Config) -> bool:
    """``--collect-only``, `wincon plan` and `wincon lint`: nothing touches the cluster."""
    return bool(config.getoption("collectonly") or config.getoption("wincon_plan_out"))


# ----------------------------------------------------------------------------- dying with the parent

# `wincon run` names itself to its pytest here; the pytest reads it once and removes it from its environment, so no
# process it starts (an xdist worker, a nested pytest) inherits a pid that is not its parent.
PARENT_PID_ENV = "WINCON_PARENT_PID"
CONTROLLER_PID_KEY = "wincon_controller_pid"  # workerinput: the xdist controller a worker dies with
DIES_WITH_PARENT_KEY = pytest.StashKey[bool]()
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with(parent_pid: int) -> bool:
    """Have Linux SIGKILL this process when ``parent_pid``, its parent, dies (prctl PR_SET_PDEATHSIG): a SIGKILL of
    `wincon run` (a CI cancel) then stops its pytest, and pytest's death its xdist workers, instead of leaving them
    creating namespaces with nobody to report to. A parent already gone (this process's parent is no longer
    ``parent_pid``: it died before the request) kills this process at once, as the signal would have. False where
    the request cannot be made (not Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
        return False
    if os.getppid() != parent_pid:
        os.kill(os.getpid(), signal.SIGKILL)
    return True


def die_with_parent(config: pytest.Config) -> None:
    """A pytest started by `wincon run` dies with it; an xdist worker of such a pytest (or of a suite run) dies with
    its controller. Plain pytest runs of the project's own tests are left as they are."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        controller = workerinput.get(CONTROLLER_PID_KEY)
        if controller:
            die_with(int(controller))
        return
    parent = os.environ.pop(PARENT_PID_ENV, "")
    if parent.isdigit():
        config.stash[DIES_WITH_PARENT_KEY] = die_with(int(parent))


def controller_input(config: pytest.Config) -> dict[str, str]:
    """What a worker needs to die with this controller: given when this controller dies with its own parent
    (`wincon run`) or checks a cluster (a suite run)."""
    if config.stash.get(DIES_WITH_PARENT_KEY, False) or is_suite_run(config):
        return {CONTROLLER_PID_KEY: str(os.getpid())}
    return {}


# ----------------------------------------------------------------------------- the start of a run


def start_run(config: pytest.Config) -> None:
    """Load limitations and the profile (the controller discovers it, xdist workers receive it), create the
    context, turn SIGTERM into an interrupt, reap what dead runs left and pre-pull images if asked."""
    limitations = limitations_mod.load(config.getoption("wincon_limitations"))
    config.stash[LIMITATIONS_KEY] = limitations
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        config.stash[RUN_ID_KEY] = workerinput["wincon_run_id"]
        config.stash[PROFILE_KEY] = ClusterProfile.from_dict(json.loads(workerinput["wincon_profile"]))
        from wincon.workloads.imageverify import Finding

        refusals = json.loads(workerinput.get("wincon_image_refusals", "[]"))
        config.stash[IMAGE_REFUSALS_KEY] = [Finding.from_dict(f) for f in refusals]
    else:
        config.stash[RUN_ID_KEY] = config.getoption("wincon_run_id") or (
            time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)
        )
        config.stash[PROFILE_KEY] = load_profile(config)
    context = WinconContext(config)
    config.stash[CONTEXT_KEY] = context
    nodes.set_reader(context.read_node)  # a node the profile does not know is read when a pod lands on it
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    if workerinput is None:
        verify_images(config, context)
    if workerinput is None and not collect_only(config):
        reaped = context.reap()
        if reaped:
            config._wincon_reaped = reaped  # type: ignore[attr-defined]
        if config.getoption("wincon_prepull"):
            from wincon.workloads.prepull import prepull

            prepull(context.api_client, context.profile, context.catalog, context.run_id, echo=_echo(config))


def verify_images(config: pytest.Config, context: WinconContext) -> None:
    """On a live cluster (the run, `wincon plan`): read each Windows image's manifest list from its registry and
    keep the pairings that cannot run (wincon.workloads.imageverify.preflight), so the checks whose pods go there are errors
    before any pod, in the plan and the run alike. An unreachable registry stops the run (exit 3, with the fix).
    A profile from a file is planned offline: no registry is read, and the header says so."""
    from wincon.workloads.imageverify import preflight

    if config.getoption("wincon_no_image_verify"):
        config.stash[IMAGES_NOTE_KEY] = "images: not verified (--no-image-verify): no registry read"
        return
    if config.getoption("wincon_profile_file"):
        config.stash[IMAGES_NOTE_KEY] = (
            "images: not verified: the profile comes from a file (no registry read; `wincon images verify "
            "--profile-file` reads them)"
        )
        return
    from wincon.workloads.imageverify import credentials_for

    pull_secret = config.getoption("wincon_image_pull_secret", None)
    # The cluster is asked for the secret only where one is named: the profile may come from discovery stood in for,
    # and the docker config needs no cluster.
    credentials = credentials_for(
        context.api_client if pull_secret else None, pull_secret, config.getoption("wincon_docker_config", None)
    )
    refused, note = preflight(context.catalog, context.profile, credentials=credentials)
    config.stash[IMAGE_REFUSALS_KEY] = refused
    config.stash[IMAGES_NOTE_KEY] = note


def _echo(config: pytest.Config) -> Any:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    return reporter.write_line if reporter else print


def _raise_keyboard_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def load_profile(config: pytest.Config) -> ClusterProfile:
    """The profile from ``--profile-file`` or the cluster, with ``--cni``, ``--network-policy`` and
    ``--windows-build`` applied."""
    from wincon.cluster.client import connect
    from wincon.clusterinfo.profile import (
        apply_cni_override,
        apply_network_policy_override,
        discover,
        load_profile_file,
    )

    path = config.getoption("wincon_profile_file")
    cni = config.getoption("wincon_cni")
    policy = config.getoption("wincon_network_policy")
    if path:
        profile = load_profile_file(path)
        if cni:
            apply_cni_override(profile, cni)
        if policy:
            apply_network_policy_override(profile, policy)
    else:
        api = connect(config.getoption("wincon_kubeconfig"), config.getoption("wincon_context"))
        profile = discover(api, cni, policy)
    build = config.getoption("wincon_windows_build")
    if build:
        profile = profile.restrict_to_build(build)
    if not profile.windows_nodes:
        raise InfrastructureError(
            "the cluster has no Windows nodes" + (f" of build {build}" if build else ""),
            "add a Windows node pool (or drop --windows-build); wincon checks Windows nodes only",
        )
    if not collect_only(config):
        require_a_schedulable_windows_node(profile)
    return profile


def require_a_schedulable_windows_node(profile: ClusterProfile) -> None:
    """Stop the run with one infrastructure error when no Windows node can take a suite pod at all (every
    one NotReady, or tainted beyond the usual Windows taints), instead of every test waiting its timeout."""
    from wincon.checks.pods import schedulable_windows_nodes
    from wincon.workloads.pinning import WINDOWS_TOLERATIONS

    if schedulable_windows_nodes(profile):
        return
    why = "; ".join(
        f"{n.name}: " + ("NotReady" if not n.ready else "taints " + ", ".join(n.taints)) for n in profile.windows_nodes
    )
    tolerated = ", ".join(f"{t['key']}={t['value']}:{t['effect']}" for t in WINDOWS_TOLERATIONS)
    raise InfrastructureError(
        f"no Windows node can take the suite's pods ({why})",
        f"make a Windows node Ready and untaint it; the suite tolerates only {tolerated}",
    )


def worker_input(config: pytest.Config) -> dict[str, str]:
    """What xdist workers receive from the controller, so discovery happens once."""
    profile = get_profile(config)
    assert profile is not None
    return {
        "wincon_run_id": get_run_id(config),
        "wincon_profile": json.dumps(profile.to_dict()),
        "wincon_image_refusals": json.dumps([f.to_dict() for f in get_image_refusals(config)]),
    }


def header_lines(config: pytest.Config) -> list[str]:
    profile = get_profile(config)
    if profile is None:
        return []
    lines = [f"wincon run {get_run_id(config)}"] + [f"  {line}" for line in profile.summary_lines()]
    if config.stash.get(IMAGES_NOTE_KEY, ""):
        lines.append(f"  {config.stash[IMAGES_NOTE_KEY]}")
    if config.getoption("wincon_allow_disruptive", False):
        lines.append("  disruptive checks: run (--allow-disruptive)")
    else:
        lines.append("  disruptive checks: skipped (pass --allow-disruptive to run them)")
    if config.stash.get(LEASE_NOTE_KEY, ""):
        lines.append(f"  {config.stash[LEASE_NOTE_KEY]}")
    reaped = getattr(config, "_wincon_reaped", None)
    if reaped:
        lines.append(f"  reaped {len(reaped)} namespaces left by dead runs: {', '.join(reaped)}")
    return lines


# ----------------------------------------------------------------------------- the context fixtures use


@dataclass
class WinconContext:
    """Everything a suite test needs about the cluster, created once per process."""

    config: pytest.Config
    _api_client: Any = None
    _catalog: Any = None
    _registry: Any = None
    _hints: dict[str, str] | None = None
    _lease: Any = None  # wincon.cluster.leases.LeaseHolder of the controller's run
    worker: str = field(default="")

    def __post_init__(self) -> None:
        workerinput = getattr(self.config, "workerinput", None)
        self.worker = workerinput["workerid"].replace("gw", "w") if workerinput else "w0"

    @property
    def profile(self) -> ClusterProfile:
        profile = get_profile(self.config)
        assert profile is not None, "WinconContext exists only once the profile is loaded"
        return profile

    @property
    def run_id(self) -> str:
        return get_run_id(self.config)

    @property
    def pod_start_timeout(self) -> float:
        return float(self.config.getoption("wincon_pod_timeout"))

    @property
    def api_client(self) -> Any:
        if self._api_client is None:
            from wincon.cluster.client import load_api_client

            api_client = load_api_client(
                self.config.getoption("wincon_kubeconfig"), self.config.getoption("wincon_context")
            )
            pull_secret = self.config.getoption("wincon_image_pull_secret", None)
            if pull_secret:  # every pod it creates names the secret; each namespace it creates gets a copy
                from wincon.workloads.pullsecret import install

                install(api_client, pull_secret)
            self._api_client = api_client
        return self._api_client

    @property
    def catalog(self) -> Any:
        if self._catalog is None:
            from wincon.workloads.catalog import Catalog

            repo_list = self.config.getoption("wincon_repo_list")
            repo_map = None
            if not repo_list and not os.environ.get("KUBE_TEST_REPO_LIST"):
                repo_map = hints.repo_list(self.local_hints)
            self._catalog = Catalog.load(repo_list=repo_list, repo_map=repo_map)
            carried = hints.images(self.local_hints)
            if carried:
                self._catalog.carry(carried)  # their images, the local agnhost under its release's tag
        return self._catalog

    @property
    def local_hints(self) -> dict[str, str]:
        """What a wincon local cluster hands to the suite (empty on any other cluster)."""
        if self._hints is None:
            self._hints = hints.read(self.api_client)
        return self._hints

    @property
    def external_ip(self) -> str:
        """``--external-ip``, else the local cluster's simulated external host, else the public default."""
        return (
            self.config.getoption("wincon_external_ip")
            or self.local_hints.get("external-ip")
            or options.DEFAULT_EXTERNAL_IP
        )

    @property
    def external_host(self) -> str:
        """``--external-host``, else the local cluster's simulated external host's name, else the default."""
        return (
            self.config.getoption("wincon_external_host")
            or self.local_hints.get("external-host")
            or options.DEFAULT_EXTERNAL_HOST
        )

    @property
    def namespaces(self) -> Any:
        if self._registry is None:
            from wincon.cluster.namespaces import NamespaceRegistry

            self._registry = NamespaceRegistry(
                self.api_client, self.run_id, self.worker, keep=bool(self.config.getoption("wincon_keep"))
            )
        return self._registry

    def read_node(self, name: str) -> dict[str, Any] | None:
        """Node ``name`` as the API server returns it now (a dict), or None when it has no such node."""
        from kubernetes import client
        from kubernetes.client.exceptions import ApiException

        from wincon.cluster.client import call

        try:
            response = call(client.CoreV1Api(self.api_client).read_node, name, _preload_content=False)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        data: dict[str, Any] = json.loads(response.data)
        return data

    def reap(self) -> list[str]:
        """The start of a run (the controller): take this run's Lease first (so that a start beside it leaves it
        alone), then reap what runs whose Lease expired, or dead runs without one, left; and their Leases."""
        from wincon.cluster import leases
        from wincon.cluster.namespaces import reap

        if self.config.getoption("wincon_profile_file"):
            return []
        from kubernetes.client.exceptions import ApiException

        self.hold_lease()
        try:
            runs = {run: lease for run, lease in leases.read_runs(self.api_client).items() if run != self.run_id}
        except ApiException as exc:  # the others' Leases unreadable: only their age and owners tell, as before
            self.config.stash[LEASE_NOTE_KEY] = (
                self.config.stash.get(LEASE_NOTE_KEY, "") + f"; other runs' Leases unreadable ({exc.status} "
                f"{exc.reason}): their namespaces are reaped past --namespace-ttl"
            )
            runs = {}
        names = reap(self.api_client, int(self.config.getoption("wincon_ns_ttl")), self.run_id, runs=runs)
        leases.delete_expired(self.api_client, runs, time.time())
        return names

    def hold_lease(self) -> None:
        """This run's Lease, renewed until :meth:`finish`; a cluster that refuses it (RBAC without leases) leaves
        the run without one, and the header says what that means."""
        from kubernetes.client.exceptions import ApiException

        from wincon.cluster.leases import LEASE_NAMESPACE, LeaseHolder

        holder = LeaseHolder(self.api_client, self.run_id)
        try:
            holder.acquire()
        except ApiException as exc:
            self.config.stash[LEASE_NOTE_KEY] = (
                f"no Lease for this run ({exc.status} {exc.reason} in {LEASE_NAMESPACE}): another run's start may reap "
                "its namespaces once they are older than --namespace-ttl; grant leases as manifests/rbac/runner.yaml does"
            )
            return
        self._lease = holder
        self.config.stash[LEASE_NOTE_KEY] = f"Lease {LEASE_NAMESPACE}/{holder.name} held while the run lives"

    def finish(self) -> None:
        """The end of this process's run: delete its namespaces; the controller also sweeps the run's, then lets
        its Lease go."""
        if self._registry is not None:
            self._registry.delete_all()
        if not hasattr(self.config, "workerinput") and not collect_only(self.config):
            self.sweep_run()
        if self._lease is not None:
            try:
                self._lease.release()
            except Exception:  # it expires by itself; the next start deletes it
                pass
            self._lease = None

    def sweep_run(self) -> None:
        """Delete every namespace of this run, whichever worker made it (workers may die on interrupt)."""
        if self.config.getoption("wincon_keep") or self.config.getoption("wincon_profile_file"):
            return
        from kubernetes import client

        from wincon.cluster.namespaces import RUN_ID, SELECTOR, delete_namespace

        core = client.CoreV1Api(self.api_client)
        try:
            items = core.list_namespace(label_selector=f"{SELECTOR},{RUN_ID}={self.run_id}", _request_timeout=15).items
        except Exception:
            return  # the next run's reaper finds them
        for ns in items:
            if ns.metadata.deletion_timestamp is not None:
                continue  # its deletion is under way (a test's teardown asked for it): asking again adds nothing
            try:
                delete_namespace(core, ns.metadata.name)
            except Exception:
                continue
