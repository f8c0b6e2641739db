"""wincon.localcluster.netns.make_cgroup: a real node's cgroupRoot gets eight times the default CPU weight, so that
its pods are not starved by the host's own processes (docs/local-cluster.md; the CPU-limit cap check needs its
twin given more than the limit). Against a fake cgroup tree of each layout."""

from __future__ import annotations

from pathlib import Path

from wincon.localcluster import netns


def v1_tree(root: Path) -> list[Path]:
    """cpu (with cpu.shares), cpuset (with its two values) and memory, as the v1 hierarchies are mounted; a child
    cgroup's control files appear when the directory is made, which the fake mkdir does for cpu.shares."""
    for name in ("cpu", "cpuset", "memory"):
        (root / name).mkdir(parents=True)
    (root / "cpuset" / "cpuset.cpus").write_text("0-1\n")
    (root / "cpuset" / "cpuset.mems").write_text("0\n")
    return [root / "cpu", root / "cpuset", root / "memory"]


def test_a_v1_node_cgroup_gets_the_node_cpu_shares(tmp_path, monkeypatch):
    hierarchies = v1_tree(tmp_path)
    monkeypatch.setattr(netns, "hierarchies", lambda: hierarchies)
    real_mkdir = Path.mkdir

    def mkdir(self: Path, *args, **kwargs) -> None:  # the kernel makes a new cgroup's control files
        real_mkdir(self, *args, **kwargs)
        if self.parent.name == "cpu":
            (self / "cpu.shares").write_text("1024\n")

    monkeypatch.setattr(Path, "mkdir", mkdir)
    group = netns.make_cgroup("wincon", "worker-0")
    assert group == "/wincon-wincon-worker-0"
    assert (tmp_path / "cpu" / group.lstrip("/") / "cpu.shares").read_text() == str(netns.NODE_CPU_SHARES)
    assert netns.NODE_CPU_SHARES == 8 * 1024
    assert (tmp_path / "cpuset" / group.lstrip("/") / "cpuset.cpus").read_text() == "0-1\n"
    assert not (tmp_path / "memory" / group.lstrip("/") / "cpu.shares").exists()  # only where the kernel has it


def test_a_v2_node_cgroup_gets_the_node_cpu_weight(tmp_path, monkeypatch):
    root = tmp_path / "unified"
    root.mkdir()
    monkeypatch.setattr(netns, "hierarchies", lambda: [root])
    real_mkdir = Path.mkdir

    def mkdir(self: Path, *args, **kwargs) -> None:
        real_mkdir(self, *args, **kwargs)
        if self.parent == root:
            (self / "cpu.weight").write_text("100\n")

    monkeypatch.setattr(Path, "mkdir", mkdir)
    group = netns.make_cgroup("wincon", "worker-1")
    assert (root / group.lstrip("/") / "cpu.weight").read_text() == str(netns.NODE_CPU_WEIGHT)
    assert netns.NODE_CPU_WEIGHT == 8 * 100
