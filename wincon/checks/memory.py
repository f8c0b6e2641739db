"""How the memory checks show that their load was applied: a pod's working set in the kubelet's stats/summary.

A memory check judges what a node or a container did while a pod held memory (OOM-killed it, reported pressure,
evicted it). Where the documented deviation is that nothing happened, "nothing happened" is evidence only once
the pod was shown to hold that memory: a pod whose allocation was refused at once, or that ended by itself, put
no load on anything (docs/verdicts.md, rule 4: a negative check first shows a lower bound on its load). The
reading is the one upstream takes for Windows pods (test/e2e/windows/kubelet_stats.go: WorkingSetBytes), the same
on both OSes.
"""

from __future__ import annotations

from typing import Any

from wincon.checks.node import kubelet_json

MIB = 1024 * 1024


def working_set(api_client: Any, node: str, name: str, namespace: str) -> int | None:
    """The pod's memory working set (bytes, its containers summed) in the kubelet's stats/summary, or None
    while the kubelet does not list it yet. Upstream reads the same field for Windows pods
    (test/e2e/windows/kubelet_stats.go:89)."""
    summary, _ = kubelet_json(api_client, node, "stats/summary")
    ref = {"name": name, "namespace": namespace}
    entry = next((p for p in summary.get("pods", []) if {k: p["podRef"].get(k) for k in ref} == ref), None)
    if entry is None:
        return None
    return sum((c.get("memory") or {}).get("workingSetBytes", 0) for c in entry.get("containers", []))


class Peak:
    """The largest working set read of one pod while a check waits on it: how much of its load it was seen to hold.

    ``read()`` takes one reading (the check calls it from its own poll); ``reached(n)`` says whether some reading
    was at least ``n`` bytes; ``describe()`` says what was read, for a verdict's message.
    """

    def __init__(self, api_client: Any, node: str, name: str, namespace: str) -> None:
        self.api_client, self.node, self.name, self.namespace = api_client, node, name, namespace
        self.bytes: int | None = None
        self.readings = 0

    def read(self) -> int | None:
        return self.record(working_set(self.api_client, self.node, self.name, self.namespace))

    def record(self, value: int | None) -> int | None:
        """Count one reading taken elsewhere (``working_set``'s answer), so that a poll reads stats/summary once."""
        self.readings += 1
        if value is not None:
            self.bytes = max(value, self.bytes or 0)
        return value

    def reached(self, threshold: float) -> bool:
        return self.bytes is not None and self.bytes >= threshold

    def describe(self) -> str:
        if self.bytes is None:
            return f"the kubelet on {self.node} did not list pod {self.name} in {self.readings} stats/summary readings"
        return f"pod {self.name}'s largest working set was {self.bytes / MIB:.0f} MiB over {self.readings} readings"
