"""The host kernel settings a local cluster's real nodes need, raised by ``wincon cluster up`` before it starts them.

Every real node runs a kubelet and a containerd of its own, all as root, and the kernel counts inotify instances
and watches per user, across every local cluster on the machine. At the kernel's default of 128 instances, with the
main job's cluster left running (as ``make main`` leaves it) and the integration and fault tests' clusters up, the
kubelets died with ``inotify_init: too many open files`` (issue 35). kind's known issues ("Pod errors due to too
many open files") give the figures used here for several clusters on one host: 512 instances, 524288 watches.

A setting is only raised, never lowered, and it is the host's: it stays after ``wincon cluster down`` (the next
cluster needs it too), as ``sysctl -w`` would leave it. Where it cannot be raised (not root, ``/proc/sys`` mounted
read-only as in an unprivileged container) ``up`` stops before anything is created, naming the setting and the fix.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from wincon.commandline.errors import LocalClusterError

PROC_SYS = Path("/proc/sys")


@dataclass(frozen=True)
class Setting:
    """A kernel setting (its sysctl name), the least value the local clusters need, and why."""

    key: str
    minimum: int
    why: str

    def path(self, proc_sys: Path = PROC_SYS) -> Path:
        """Its file under ``proc_sys`` (``fs.inotify.max_user_instances`` -> ``fs/inotify/max_user_instances``)."""
        return proc_sys / self.key.replace(".", "/")


SETTINGS = (
    Setting(
        "fs.inotify.max_user_instances",
        512,
        "every real node's kubelet and containerd take several inotify instances, counted for root across all "
        "local clusters; at 128 the kubelets of a third or fourth cluster exit with "
        "'inotify_init: too many open files'",
    ),
    Setting(
        "fs.inotify.max_user_watches",
        524288,
        "the kubelets (cAdvisor) and containerd watch the cgroup and log directories of every container of every "
        "local cluster, counted for root together",
    ),
)


def fix(setting: Setting) -> str:
    """How to set ``setting`` by hand, for the error that says wincon could not."""
    return (
        f"as root on the host: `sysctl -w {setting.key}={setting.minimum}` (to keep it after a reboot: "
        f"`echo '{setting.key} = {setting.minimum}' > /etc/sysctl.d/99-wincon.conf`); in a container, set it on "
        "the host or run the container privileged; then run `wincon cluster up` again. "
        "Or start without real nodes: `wincon cluster up --dataplane none`"
    )


def _read(setting: Setting, proc_sys: Path) -> int:
    path = setting.path(proc_sys)
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError) as exc:
        raise LocalClusterError(
            f"cannot read {setting.key} from {path} ({exc}); the local cluster's real nodes need it at least "
            f"{setting.minimum}: {setting.why}",
            f"check that /proc is mounted; {fix(setting)}",
        ) from None


def _write(path: Path, value: int) -> None:
    path.write_text(f"{value}\n")


def _why_not(exc: OSError) -> str:
    if os.geteuid() != 0:
        return f"wincon runs as uid {os.geteuid()}, not root"
    if exc.errno == errno.EROFS:
        return "/proc/sys is mounted read-only here (a container without the privilege to change the host's kernel)"
    return f"writing it failed: {exc.strerror or exc}"


def _cannot(setting: Setting, current: int, reason: str) -> LocalClusterError:
    return LocalClusterError(
        f"{setting.key} is {current}, below the {setting.minimum} the local cluster's real nodes need "
        f"({setting.why}), and wincon cannot raise it: {reason}",
        fix(setting),
    )


def ensure_kernel_settings(out: TextIO, proc_sys: Path = PROC_SYS) -> list[str]:
    """Raise each of :data:`SETTINGS` that is below its minimum to that minimum, saying so on ``out`` with the
    reason; return the keys raised (none when all are high enough: nothing is written then). A LocalClusterError
    naming the setting, its value and the fix when one cannot be read, written, or does not keep the value."""
    raised = []
    for setting in SETTINGS:
        current = _read(setting, proc_sys)
        if current >= setting.minimum:
            continue
        print(
            f"raising {setting.key} from {current} to {setting.minimum} for the local clusters: {setting.why}",
            file=out,
            flush=True,
        )
        try:
            _write(setting.path(proc_sys), setting.minimum)
        except OSError as exc:
            raise _cannot(setting, current, _why_not(exc)) from None
        after = _read(setting, proc_sys)
        if after < setting.minimum:
            raise _cannot(setting, current, f"the kernel kept {after} after {setting.minimum} was written")
        raised.append(setting.key)
    return raised
