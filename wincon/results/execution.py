"""Where a run's Windows checks really executed, and with which isolation (issue 31 item 6: no green on a lie).

Upstream's Windows CI shows what a green run can hide: Hyper-V jobs that ran in process isolation for months
while their tabs passed (kubernetes-sigs/windows-testing#553), a lane that uploaded zero tests
(projectcalico/calico#13834). A run therefore records, per Windows node of its profile, how many Windows checks
executed there: a Windows check (not a Linux control) that reached a verdict of its own (passed, failed,
xfailed, xpassed) and whose pods ran on that node (its ``node`` properties: the placement check and the
data-plane gate record them). A skipped check, and one that errored (before or after reaching a node: it proved
nothing), executed nowhere. Beside the count, the isolation the checks observed there (``isolation_observed``
properties, ``node=process|hyperv``, recorded by the checks that look: wincon.clusterinfo.nodes.observe_isolation); a check
that observed none counts as "not observed", never as process.

The rules read from this record: ``wincon gate`` fails a run in which no Windows check executed on a real
Windows node; ``wincon run`` exits 1 where the cluster has real Windows nodes and none of its Windows checks
executed on one, and where a check that asked for Hyper-V isolation observed process isolation. A cluster whose
Windows nodes are all simulated (the local cluster) keeps its exit code, and the summary says no Windows node was
real.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from wincon.results.model import CaseResult, Verdict
from wincon.session.verdicts import ISOLATION, ISOLATION_OBSERVED, NODE

REACHED = (Verdict.PASSED, Verdict.FAILED, Verdict.XFAILED, Verdict.XPASSED)
KINDS = ("process", "hyperv")
NOT_OBSERVED = "not observed"
METADATA_KEY = "windows-execution"


@dataclass
class NodeExecution:
    name: str
    real: bool
    executed: int = 0
    isolation: dict[str, int] = field(default_factory=lambda: {k: 0 for k in (*KINDS, NOT_OBSERVED)})


@dataclass
class Execution:
    """The record of one run; ``known`` is False where the run has no profile (its nodes are unknown)."""

    known: bool
    nodes: dict[str, NodeExecution] = field(default_factory=dict)
    windows_checks: int = 0  # Windows checks in the run (any verdict)
    hyperv_in_process: list[str] = field(default_factory=list)  # "check on node": asked Hyper-V, saw process

    @property
    def real_nodes(self) -> list[str]:
        return [n.name for n in self.nodes.values() if n.real]

    @property
    def executed_on_real(self) -> int:
        return sum(n.executed for n in self.nodes.values() if n.real)

    def problems(self) -> list[str]:
        """What makes `wincon run` exit 1 (a cluster with real Windows nodes only)."""
        out = []
        if self.known and self.real_nodes and self.windows_checks and not self.executed_on_real:
            out.append(
                f"no Windows check executed on a real Windows node ({', '.join(self.real_nodes)}): all "
                f"{self.windows_checks} were skipped or errored before reaching a node, or gave no verdict there"
            )
        for where in self.hyperv_in_process:
            out.append(f"{where} asked for Hyper-V isolation but observed process isolation")
        return out

    def summary(self) -> str:
        """One line for the end of a run."""
        if not self.known:
            return "Windows checks executed: unknown (the run recorded no cluster profile)"
        if not self.nodes:
            return "no Windows node in the cluster: no Windows check executed on a real Windows node"
        if not self.real_nodes:
            return (
                f"no Windows node was real ({len(self.nodes)} simulated): no Windows check executed on a real "
                "Windows node; this run says nothing of a Windows data plane"
            )
        if not self.executed_on_real:
            return f"no Windows check executed on a real Windows node ({', '.join(self.real_nodes)})"
        parts = []
        for node in self.nodes.values():
            if not node.real:
                continue
            seen = ", ".join(f"{k} {v}" for k, v in node.isolation.items() if v)
            parts.append(f"{node.name} {node.executed}" + (f" ({seen})" if seen else ""))
        return f"Windows checks executed on real Windows nodes: {'; '.join(parts)}"

    def to_dict(self) -> dict[str, Any]:
        """The record, per node (the dashboard's)."""
        return {
            "known": self.known,
            "real_windows_nodes": len(self.real_nodes),
            "simulated_windows_nodes": len(self.nodes) - len(self.real_nodes),
            "windows_checks": self.windows_checks,
            "executed_on_real_windows_nodes": self.executed_on_real,
            "hyperv_observed_process": list(self.hyperv_in_process),
            "nodes": {
                n.name: {"real": n.real, "executed": n.executed, "isolation": dict(n.isolation)}
                for n in self.nodes.values()
            },
            "summary": self.summary(),
        }

    def to_metadata(self) -> dict[str, str]:
        """finished.json's ``windows-execution``: a map of strings (TestGrid's metadata form), one key per node."""
        meta = {
            "known": "true" if self.known else "false",
            "real-windows-nodes": str(len(self.real_nodes)),
            "simulated-windows-nodes": str(len(self.nodes) - len(self.real_nodes)),
            "windows-checks": str(self.windows_checks),
            "executed-on-real-windows-nodes": str(self.executed_on_real),
            "hyperv-observed-process": str(len(self.hyperv_in_process)),
            "summary": self.summary(),
        }
        for n in self.nodes.values():
            seen = ", ".join(f"{kind} {number}" for kind, number in n.isolation.items())
            meta[f"node/{n.name}"] = f"{'real' if n.real else 'simulated'}; executed {n.executed}; isolation {seen}"
        return meta


def _observed(case: CaseResult) -> dict[str, str]:
    """{node: kind} the case observed (the last word per node)."""
    seen: dict[str, str] = {}
    for value in case.props(ISOLATION_OBSERVED):
        node, _, kind = value.rpartition("=")
        if node and kind in KINDS:
            seen[node] = kind
    return seen


def record(cases: Iterable[CaseResult], profile: dict[str, Any] | None) -> Execution:
    """The execution record of a run's cases against its profile (``ClusterProfile.to_dict()``)."""
    nodes = [n for n in (profile or {}).get("nodes") or [] if isinstance(n, dict) and n.get("os") == "windows"]
    result = Execution(known=bool(profile and "nodes" in profile))
    for node in nodes:
        name = str(node.get("name", ""))
        result.nodes[name] = NodeExecution(name, real=not node.get("simulated", False))
    for case in cases:
        if case.is_control:
            continue
        result.windows_checks += 1
        observed = _observed(case)
        if case.prop(ISOLATION) == "hyperv":
            for where, kind in observed.items():
                if kind == "process":
                    result.hyperv_in_process.append(f"{case.name} on {where}")
        if case.verdict not in REACHED:
            continue
        for name in dict.fromkeys(case.props(NODE)):
            node_record = result.nodes.get(name)
            if node_record is None:
                continue  # a Linux node (a check's helper pod), or one the profile did not know
            node_record.executed += 1
            node_record.isolation[observed.get(name, NOT_OBSERVED)] += 1
    return result
