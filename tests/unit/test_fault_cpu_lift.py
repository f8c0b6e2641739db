"""tests/faults/test_fault_cpu.py's lifting, on a cgroup tree of plain files: the quota files of one pod (its own
and its containers', parents first, found by the pod's UID), each lifted once to cgroup v1's -1 or v2's max, the
value it held kept for the restore; another pod's cgroups are not touched."""

from __future__ import annotations

from pathlib import Path

from tests.faults import test_fault_cpu as fault

UID, OTHER = "0b6c6f2e-1111-4c1e-9d7e-000000000001", "0b6c6f2e-2222-4c1e-9d7e-000000000002"


def cgroup(path: Path, **files: str) -> Path:
    path.mkdir(parents=True)
    for name, text in files.items():
        (path / name.replace("_", ".", 1)).write_text(text)
    return path


def tree(tmp_path: Path, quota_file: str, limited: str) -> Path:
    top = tmp_path / "cpu" / "wincon-faults-x-worker-0"
    pod = cgroup(top / "kubepods" / "burstable" / f"pod{UID}", **{quota_file: limited})
    cgroup(pod / "c0ffee", **{quota_file: limited})
    cgroup(pod / "pause", **{quota_file: "-1\n" if quota_file.endswith("us") else "max 100000\n"})
    other = cgroup(top / "kubepods" / "burstable" / f"pod{OTHER}", **{quota_file: limited})
    cgroup(other / "beef", **{quota_file: limited})
    return top


def test_a_v1_pods_quotas_are_found_parents_first_and_lifted_once(tmp_path, monkeypatch):
    top = tree(tmp_path, "cpu_cfs_quota_us", "50000\n")
    monkeypatch.setattr(fault.netns, "our_cgroups", lambda name: [top])
    files = fault.quota_files("faults-x", UID)
    pod = top / "kubepods" / "burstable" / f"pod{UID}"
    assert files == [pod / "cpu.cfs_quota_us", pod / "c0ffee" / "cpu.cfs_quota_us", pod / "pause" / "cpu.cfs_quota_us"]
    assert [fault.lift(f) for f in files] == ["50000", "50000", None]  # the pause container held no limit
    assert all(f.read_text().strip() == "-1" for f in files)
    assert [fault.lift(f) for f in files] == [None, None, None]  # lifted already: nothing held to restore
    other = top / "kubepods" / "burstable" / f"pod{OTHER}" / "beef" / "cpu.cfs_quota_us"
    assert other.read_text() == "50000\n"


def test_a_v2_quota_is_set_to_max(tmp_path, monkeypatch):
    top = tree(tmp_path, "cpu_max", "50000 100000\n")
    monkeypatch.setattr(fault.netns, "our_cgroups", lambda name: [top])
    files = fault.quota_files("faults-x", UID)
    assert fault.lift(files[1]) == "50000 100000"
    assert files[1].read_text() == "max"
    assert fault.unlimited(files[1], "max 100000\n")


def test_a_quota_file_gone_with_its_pod_is_not_lifted(tmp_path):
    assert fault.lift(tmp_path / "gone" / "cpu.cfs_quota_us") is None


def test_a_guaranteed_pods_quotas_are_found_right_under_kubepods(tmp_path, monkeypatch):
    top = tmp_path / "cpu" / "wincon-faults-x-worker-0"
    pod = cgroup(top / "kubepods" / f"pod{UID}", cpu_cfs_quota_us="50000\n")
    cgroup(pod / "c0ffee", cpu_cfs_quota_us="50000\n")
    monkeypatch.setattr(fault.netns, "our_cgroups", lambda name: [top])
    assert fault.quota_files("faults-x", UID) == [pod / "cpu.cfs_quota_us", pod / "c0ffee" / "cpu.cfs_quota_us"]


def test_other_pods_cgroups_torn_down_meanwhile_are_not_walked(tmp_path, monkeypatch):
    """CI at 86ee81d: the keeper's walk of the whole tree raised FileNotFoundError on another pod's cgroup removed
    under it, and the fault test failed as a fault half-injected. The pod's own places are looked at, nothing else:
    a walk that enters any other directory fails here."""
    top = tree(tmp_path, "cpu_cfs_quota_us", "50000\n")
    monkeypatch.setattr(fault.netns, "our_cgroups", lambda name: [top])
    own = top / "kubepods" / "burstable" / f"pod{UID}"
    walked: list[Path] = []
    real = fault.netns.cgroup_dirs

    def spy(pod_dir: Path) -> list[Path]:
        walked.append(pod_dir)
        return real(pod_dir)

    monkeypatch.setattr(fault.netns, "cgroup_dirs", spy)
    monkeypatch.setattr(Path, "glob", lambda self, pattern: (_ for _ in ()).throw(FileNotFoundError(str(self))))
    assert len(fault.quota_files("faults-x", UID)) == 3
    assert own in walked and all(p.name == f"pod{UID}" for p in walked)
    assert fault.quota_files("faults-x", "0b6c6f2e-3333-4c1e-9d7e-000000000003") == []  # a pod gone: nothing, no error
