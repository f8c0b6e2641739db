"""wincon/localcluster/kernel.py: `wincon cluster up` raises the host's inotify limits its real nodes need (issue 35:
at the kernel's default of 128 instances the kubelets of `make test`'s clusters died next to `make main`'s), on a
fake /proc/sys; where it cannot, one error naming the setting, its value and the fix."""

from __future__ import annotations

import errno
import io
import os
from pathlib import Path

import pytest

from wincon.commandline.errors import ExitCode, LocalClusterError
from wincon.localcluster import cluster, kernel

INSTANCES = "fs.inotify.max_user_instances"
WATCHES = "fs.inotify.max_user_watches"


def fake_proc_sys(tmp_path: Path, instances: int, watches: int) -> Path:
    root = tmp_path / "proc" / "sys"
    (root / "fs" / "inotify").mkdir(parents=True)
    (root / "fs" / "inotify" / "max_user_instances").write_text(f"{instances}\n")
    (root / "fs" / "inotify" / "max_user_watches").write_text(f"{watches}\n")
    return root


def value(root: Path, key: str) -> int:
    return int((root / key.replace(".", "/")).read_text())


def test_the_settings_are_the_inotify_limits_at_kinds_figures():
    assert {s.key: s.minimum for s in kernel.SETTINGS} == {INSTANCES: 512, WATCHES: 524288}
    assert kernel.SETTINGS[0].path() == Path("/proc/sys/fs/inotify/max_user_instances")


def test_limits_below_the_minimum_are_raised_and_each_is_named_with_its_reason(tmp_path):
    root = fake_proc_sys(tmp_path, 128, 192536)  # this machine's values before issue 35
    out = io.StringIO()
    assert kernel.ensure_kernel_settings(out, root) == [INSTANCES, WATCHES]
    assert value(root, INSTANCES) == 512 and value(root, WATCHES) == 524288
    lines = out.getvalue().splitlines()
    assert lines[0].startswith(f"raising {INSTANCES} from 128 to 512 for the local clusters: ")
    assert "inotify_init: too many open files" in lines[0]
    assert lines[1].startswith(f"raising {WATCHES} from 192536 to 524288 for the local clusters: ")
    assert len(lines) == 2


def test_limits_at_or_above_the_minimum_are_left_as_they_are_and_nothing_is_said(tmp_path):
    root = fake_proc_sys(tmp_path, 8192, 524288)
    out = io.StringIO()
    assert kernel.ensure_kernel_settings(out, root) == []
    assert value(root, INSTANCES) == 8192 and value(root, WATCHES) == 524288  # never lowered
    assert out.getvalue() == ""


def test_only_the_low_one_is_raised(tmp_path):
    root = fake_proc_sys(tmp_path, 1024, 8192)
    out = io.StringIO()
    assert kernel.ensure_kernel_settings(out, root) == [WATCHES]
    assert value(root, INSTANCES) == 1024 and value(root, WATCHES) == 524288
    assert INSTANCES not in out.getvalue()


def refuse(err: int):
    def write(path: Path, value: int) -> None:
        raise OSError(err, os.strerror(err), str(path))

    return write


def test_not_root_is_one_error_with_the_sysctl_fix_and_exit_10(tmp_path, monkeypatch):
    root = fake_proc_sys(tmp_path, 128, 524288)
    monkeypatch.setattr(kernel, "_write", refuse(errno.EACCES))
    monkeypatch.setattr(kernel.os, "geteuid", lambda: 1000)
    with pytest.raises(LocalClusterError) as err:
        kernel.ensure_kernel_settings(io.StringIO(), root)
    assert err.value.exit_code == ExitCode.LOCAL_CLUSTER
    assert err.value.message.startswith(f"{INSTANCES} is 128, below the 512 the local cluster's real nodes need (")
    assert err.value.message.endswith("wincon cannot raise it: wincon runs as uid 1000, not root")
    assert f"`sysctl -w {INSTANCES}=512`" in err.value.fix and "/etc/sysctl.d/" in err.value.fix
    assert "--dataplane none" in err.value.fix
    assert value(root, INSTANCES) == 128


def test_a_read_only_proc_sys_is_named_as_such(tmp_path, monkeypatch):
    root = fake_proc_sys(tmp_path, 128, 524288)
    monkeypatch.setattr(kernel, "_write", refuse(errno.EROFS))
    monkeypatch.setattr(kernel.os, "geteuid", lambda: 0)
    with pytest.raises(LocalClusterError, match=r"cannot raise it: /proc/sys is mounted read-only") as err:
        kernel.ensure_kernel_settings(io.StringIO(), root)
    assert "run the container privileged" in err.value.fix


def test_a_value_the_kernel_does_not_keep_is_an_error_not_a_silent_pass(tmp_path, monkeypatch):
    root = fake_proc_sys(tmp_path, 128, 524288)
    monkeypatch.setattr(kernel, "_write", lambda path, value: path.write_text("256\n"))  # a capped write
    with pytest.raises(LocalClusterError, match=f"{INSTANCES} is 128, .* the kernel kept 256 after 512 was written"):
        kernel.ensure_kernel_settings(io.StringIO(), root)


def test_an_unreadable_setting_is_named_with_its_path(tmp_path):
    root = fake_proc_sys(tmp_path, 128, 524288)
    (root / "fs" / "inotify" / "max_user_instances").unlink()
    with pytest.raises(LocalClusterError, match=f"cannot read {INSTANCES} from {root}/fs/inotify/max_user_instances"):
        kernel.ensure_kernel_settings(io.StringIO(), root)


def test_cluster_up_raises_the_limits_after_the_preflight_and_before_anything_is_created(tmp_path, monkeypatch):
    """The call in cluster.up: a start with real nodes stops at a limit it cannot raise, having created nothing."""
    monkeypatch.setenv("WINCON_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("KWOK_WORKDIR", str(tmp_path / "kwok"))
    monkeypatch.delenv("WINCON_KUBERNETES_VERSION", raising=False)  # restored after: up selects a release in it
    monkeypatch.setattr(cluster.build, "require_binaries", lambda *a, **k: tmp_path / "bin")
    calls: list[str] = []
    monkeypatch.setattr(cluster.dataplane, "preflight", lambda: calls.append("preflight"))

    def refused(out):
        calls.append("kernel")
        raise LocalClusterError("refused", "fix")

    monkeypatch.setattr(cluster, "ensure_kernel_settings", refused)
    monkeypatch.setattr(cluster.dataplane, "make_plan", lambda *a, **k: pytest.fail("a plan was made"))
    monkeypatch.setattr(cluster, "_start", lambda *a, **k: pytest.fail("the control plane was started"))
    with pytest.raises(LocalClusterError, match="refused"):
        cluster.up("kt-unit", out=io.StringIO())
    assert calls == ["preflight", "kernel"]
    assert not (tmp_path / "cache" / "clusters" / "kt-unit").exists()
