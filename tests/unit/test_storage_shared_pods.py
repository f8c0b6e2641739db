"""The storage suite's checks that only read their own volume share one pod per OS and build (issue 22, item 3):
wincon.workloads.sharedpods and the reading checks' layout in suites/storage/test_volume_types.py."""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import Any

import pytest

from tests.support import suites
from wincon.commandline.errors import InfrastructureError
from wincon.workloads.sharedpods import SharedPods, parts_to_run


def load_volume_types() -> Any:
    return suites.load("suites/storage/test_volume_types.py")


class Starts:
    """A fake start: records each call; keys in ``broken`` fail as a pod that never ran."""

    def __init__(self, holds: set[str], broken: tuple[Any, ...] = ()) -> None:
        self.calls: list[tuple[Any, str]] = []
        self.holds, self.broken = holds, broken

    def __call__(self, key: Any, part: str) -> tuple[Any, set[str]]:
        self.calls.append((key, part))
        if key in self.broken:
            raise InfrastructureError(f"pod readers-{key[0]} never ran")
        return NS(name=f"readers-{key[0]}"), self.holds | {part}


def test_the_shared_pod_starts_once_per_key_and_serves_each_part_it_holds():
    starts = Starts({"configMap", "secret", "token"})
    shared = SharedPods(starts)
    first = shared.get(("windows", 17763), "configMap")
    assert first is not None and first.name == "readers-windows"
    assert shared.get(("windows", 17763), "secret") is first
    assert shared.get(("windows", 17763), "token") is first
    assert shared.get(("linux", None), "token").name == "readers-linux"
    assert starts.calls == [(("windows", 17763), "configMap"), (("linux", None), "token")]


def test_a_part_the_shared_pod_does_not_hold_falls_back_to_the_checks_own_pod():
    shared = SharedPods(Starts({"configMap"}))
    assert shared.get(("windows", 17763), "configMap") is not None
    assert shared.get(("windows", 17763), "downward") is None


def test_a_shared_pod_that_cannot_start_judges_no_check_each_falls_back():
    starts = Starts({"configMap", "secret"}, broken=(("windows", 17763),))
    shared = SharedPods(starts)
    assert shared.get(("windows", 17763), "configMap") is None
    assert shared.get(("windows", 17763), "secret") is None  # not started again: one failed wait, not two
    assert len(starts.calls) == 1
    assert "never ran" in str(shared.errors[("windows", 17763)])
    assert shared.get(("linux", None), "secret") is not None  # the other OS's pod is its own


def test_a_skip_while_starting_is_the_asking_checks_and_is_not_kept():
    calls = []

    def start(key: Any, part: str) -> Any:
        calls.append(part)
        if len(calls) == 1:
            pytest.skip("no Ready windows node")
        return NS(name="readers"), {part}

    shared = SharedPods(start)
    with pytest.raises(pytest.skip.Exception):
        shared.get(("windows", 17763), "token")
    assert shared.get(("windows", 17763), "token") is not None


def item(name: str, os_name: str = "windows", kind: str | None = None, skipped: bool = False) -> Any:
    params = {"target_os": os_name, **({"kind": kind} if kind else {})}
    return NS(
        name=f"{name}[{os_name}]",
        originalname=name,
        nodeid=f"suites/storage/test_volume_types.py::{name}[{os_name}]",
        callspec=NS(params=params),
        get_closest_marker=lambda marker: object() if (skipped and marker == "skip") else None,
    )


def test_the_shared_pod_holds_the_parts_of_the_reading_checks_that_run_with_its_key():
    vt = load_volume_types()
    items = [
        item(vt.BY_KIND, kind="configMap"),
        item(vt.BY_KIND, kind="secret", skipped=True),  # skipped at collection: runs no fixture
        item("test_service_account_token_is_mounted"),
        item("test_downward_api_volume_exposes_labels_and_name", os_name="linux"),
        item("test_empty_dir_on_disk_is_writable_and_readable"),  # not a reading check
    ]
    assert [vt.reader_part(i) for i in items] == ["configMap", "secret", "token", "downward", None]

    def key_of(i: Any) -> Any:
        return vt.reader_key(i.callspec.params["target_os"], 17763)

    assert parts_to_run(items, vt.reader_part, key_of, ("windows", 17763)) == {"configMap", "token"}
    assert parts_to_run(items, vt.reader_part, key_of, ("linux", None)) == {"downward"}
    assert vt.reader_key("linux", 17763) == ("linux", None)  # a control's pod has no Windows build


def wincon_stub() -> Any:
    catalog = NS(image=lambda key, os_name, build: f"agnhost-{os_name}")
    return NS(catalog=catalog)


@pytest.mark.parametrize("os_name", ["windows", "linux"])
def test_each_part_is_mounted_at_the_path_its_check_reads(os_name):
    vt = load_volume_types()
    parts = {"configMap", "secret", "token", "projected", "downward"}
    body = vt.reader_manifest(wincon_stub(), "readers", os_name, 17763, parts)
    main = body["spec"]["containers"][0]
    mounts = {m["name"]: m["mountPath"] for m in main["volumeMounts"]}
    assert mounts == {
        "configmap": vt.path(os_name, "configmap"),
        "secret": vt.path(os_name, "secret"),
        "all": vt.path(os_name, "all"),
        "info": vt.path(os_name, "info"),
    }
    volumes = {v["name"]: v for v in body["spec"]["volumes"]}
    assert volumes["configmap"]["configMap"] == {"name": "special-config"}
    assert volumes["secret"]["secret"] == {"secretName": "creds"}
    assert volumes["info"]["downwardAPI"]["items"] == vt.DOWNWARD
    env = {e["name"]: e["valueFrom"] for e in main["env"]}
    assert env == {
        "WINCON_CONFIGMAP": {"configMapKeyRef": {"name": "special-config", "key": "special.how"}},
        "WINCON_SECRET": {"secretKeyRef": {"name": "creds", "key": "username"}},
    }
    assert body["metadata"]["labels"]["tier"] == "wincon"
    assert body["spec"]["os"]["name"] == os_name


def test_a_checks_own_pod_holds_only_its_part():
    vt = load_volume_types()
    body = vt.reader_manifest(wincon_stub(), "configmap-consumer", "windows", 17763, {"configMap"})
    assert [v["name"] for v in body["spec"]["volumes"]] == ["configmap"]
    assert [e["name"] for e in body["spec"]["containers"][0]["env"]] == ["WINCON_CONFIGMAP"]
    assert "tier" not in body["metadata"]["labels"]
    token_only = vt.reader_manifest(wincon_stub(), "sa-token", "windows", 17763, {"token"})
    assert not token_only["spec"].get("volumes") and "env" not in token_only["spec"]["containers"][0]
    with pytest.raises(AssertionError):
        vt.reader_manifest(wincon_stub(), "x", "windows", 17763, {"emptyDir"})
