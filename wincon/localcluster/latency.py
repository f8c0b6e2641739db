"""The Windows pod-latency model: simulated Windows nodes that take as long as real ones to run and delete a pod.

On the local cluster kwok makes a pod on a simulated node Ready at once, so a run's wall time says nothing
about the nightly job on real Windows nodes, where a pod takes tens of seconds to start. With a model
(``wincon cluster up --windows-pod-latency p50=30s,p90=54s`` or a named profile) kwok delays the Ready and
the delete of every pod on a Windows node by a time drawn from that distribution.

The distribution is piecewise uniform between the quantiles given: ``p50=30s,p90=54s`` draws from [0, 30 s)
half of the time, from [30 s, 54 s) 40 % of the time and from [54 s, 60 s) the rest (the last piece continues
the slope of the one before it unless ``max=`` is given; the first starts at ``min=``, default 0). kwok does
the drawing: each piece is one kwok Stage with a weight (its share, in tenths of a percent) and a delay of
``durationMilliseconds`` plus a uniform jitter up to ``jitterDurationMilliseconds`` (kwok v0.8.0,
pkg/utils/lifecycle/lifecycle.go, ``Stage.Delay``; among several matching stages kwok picks one by weight,
``Lifecycle.Match``). No controller of ours is involved.

Stages replace kwokctl's default ones as a whole (kwokctl v0.8.0, pkg/kwokctl/runtime/cluster.go: its defaults
apply only when the configuration holds no Stage), so with a model wincon passes the same defaults kwokctl
would use for the binary runtime, read from kwok's own stage files in the Go module cache (the module the
binaries were built from): node-initialize, node-heartbeat-with-lease, and pod-ready, pod-complete, pod-delete
of the ``fast`` set. The pod-ready and pod-delete stages are restricted to the other nodes, and a delayed copy
of each is added per piece for the Windows nodes (selected by ``.spec.nodeName``).
"""

from __future__ import annotations

import copy
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from wincon.commandline.errors import LocalClusterError, UsageError

# Upstream's own Windows density test allows, for a batch of 10 pods, p50 30 s, p90 54 s, p99 59 s
# (k8s.io/kubernetes v1.34.4, test/e2e/windows/density.go:57-59).
PROFILES: dict[str, str] = {
    "windows-density": "p50=30s,p90=54s,p99=59s",
}
# The stage files kwokctl v0.8.0 uses by default for the binary runtime (pkg/kwokctl/runtime/cluster.go,
# getDefaultNodeStages with a node lease, getDefaultPodStages), relative to kustomize/stage of the module.
DEFAULT_STAGE_FILES = (
    "node/fast/node-initialize.yaml",
    "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "pod/fast/pod-ready.yaml",
    "pod/fast/pod-complete.yaml",
    "pod/fast/pod-delete.yaml",
)
DELAYED_STAGES = ("pod-ready", "pod-delete")  # what a Windows node does slowly: run a pod, delete one
WEIGHT_SCALE = 1000  # a piece's kwok weight: its share of the draws, in tenths of a percent
_DURATION = re.compile(r"^(?P<value>\d+(\.\d+)?)(?P<unit>ms|s|m)$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0}
_KEY = re.compile(r"^p(?P<pct>\d+(\.\d+)?)$")


def _seconds(text: str, key: str) -> float:
    match = _DURATION.match(text.strip())
    if not match:
        raise UsageError(
            f"invalid duration {text!r} for {key} in --windows-pod-latency",
            "write durations as a number with a unit: 500ms, 30s, 2m",
        )
    return float(match["value"]) * _UNITS[match["unit"]]


@dataclass(frozen=True)
class Piece:
    """One uniform piece of the distribution: drawn with probability ``share``, uniform on [low, high) s."""

    share: float
    low: float
    high: float


@dataclass(frozen=True)
class LatencyModel:
    """A delay distribution given by quantiles (percent -> seconds), with its bounds."""

    spec: str
    quantiles: tuple[tuple[float, float], ...]
    low: float
    high: float

    @classmethod
    def parse(cls, text: str) -> LatencyModel:
        """``p50=30s,p90=54s[,min=..][,max=..]`` or a profile name (``windows-density``); a UsageError otherwise."""
        spec = text.strip()
        body = PROFILES.get(spec, spec)
        quantiles: dict[float, float] = {}
        low: float = 0.0
        high: float | None = None
        hint = f"write quantiles as p50=30s,p90=54s (optionally min=..., max=...), or name a profile: {', '.join(PROFILES)}"
        for part in [p for p in body.split(",") if p.strip()]:
            key, sep, value = part.partition("=")
            key = key.strip()
            if not sep:
                raise UsageError(f"invalid --windows-pod-latency {text!r}: {part!r} has no '='", hint)
            if key == "min":
                low = _seconds(value, key)
            elif key == "max":
                high = _seconds(value, key)
            elif (match := _KEY.match(key)) and 0 < float(match["pct"]) < 100:
                quantiles[float(match["pct"])] = _seconds(value, key)
            else:
                raise UsageError(f"invalid --windows-pod-latency {text!r}: unknown key {key!r}", hint)
        if not quantiles:
            raise UsageError(f"invalid --windows-pod-latency {text!r}: no quantile given", hint)
        points = sorted(quantiles.items())
        values = [low, *(s for _, s in points), *([high] if high is not None else [])]
        if any(b < a for a, b in zip(values, values[1:], strict=False)):
            raise UsageError(
                f"invalid --windows-pod-latency {text!r}: quantiles must not decrease (min <= p.. <= max)", hint
            )
        if high is None:
            # Continue the slope of the last piece to p100 (a single quantile: the mirror of the first piece).
            (p_prev, q_prev) = points[-2] if len(points) > 1 else (0.0, low)
            p_last, q_last = points[-1]
            high = q_last + (q_last - q_prev) * (100 - p_last) / (p_last - p_prev)
        return cls(spec, tuple(points), low, high)

    def pieces(self) -> list[Piece]:
        """The uniform pieces between consecutive quantiles (min, the quantiles, max), each with its share."""
        bounds = [(0.0, self.low), *self.quantiles, (100.0, self.high)]
        return [
            Piece((p1 - p0) / 100, q0, q1) for (p0, q0), (p1, q1) in zip(bounds, bounds[1:], strict=False) if p1 > p0
        ]

    def quantile(self, pct: float) -> float:
        """The model's delay (s) at percentile ``pct`` (0..100), by linear interpolation between its bounds."""
        bounds = [(0.0, self.low), *self.quantiles, (100.0, self.high)]
        for (p0, q0), (p1, q1) in zip(bounds, bounds[1:], strict=False):
            if p0 <= pct <= p1:
                return q0 if p1 == p0 else q0 + (q1 - q0) * (pct - p0) / (p1 - p0)
        raise ValueError(f"percentile {pct} is outside 0..100")

    def describe(self) -> str:
        points = ", ".join(f"p{p:g} {q:g} s" for p, q in self.quantiles)
        return f"{points} (min {self.low:g} s, max {self.high:g} s)"


def kwok_stage_dir(module: str, version: str, go: str) -> Path:
    """kwok's stage directory (kustomize/stage) in the Go module cache; a LocalClusterError if it is absent."""
    try:
        modcache = subprocess.run(
            [go, "env", "GOMODCACHE"], capture_output=True, text=True, check=True, timeout=30
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        raise LocalClusterError(
            f"cannot find the Go module cache (`{go} env GOMODCACHE`: {exc})",
            "the Windows pod-latency model reads kwok's stage files from the Go module cache: install Go",
        ) from None
    path = Path(modcache) / f"{module}@{version}" / "kustomize" / "stage"
    if not path.is_dir():
        raise LocalClusterError(
            f"kwok's stage files are not in the Go module cache ({path})",
            f"run `wincon cluster build` (it downloads the kwok module), or `go mod download {module}@{version}`",
        )
    return path


def _node_selector(stage: dict[str, Any], operator: str, nodes: list[str]) -> None:
    selector = stage["spec"].setdefault("selector", {})
    selector.setdefault("matchExpressions", []).append({"key": ".spec.nodeName", "operator": operator, "values": nodes})


def stages(model: LatencyModel, windows_nodes: list[str], stage_dir: Path) -> list[dict[str, Any]]:
    """The Stage documents for kwokctl's configuration: kwokctl's defaults, with pod-ready and pod-delete
    delayed on ``windows_nodes`` as ``model`` draws."""
    result = []
    for relative in DEFAULT_STAGE_FILES:
        doc = yaml.safe_load((stage_dir / relative).read_text())
        if doc.get("kind") != "Stage":
            raise LocalClusterError(f"{stage_dir / relative} is not a kwok Stage", "check the kwok module version")
        name = doc["metadata"]["name"]
        if name not in DELAYED_STAGES or not windows_nodes:
            result.append(doc)
            continue
        other = copy.deepcopy(doc)
        _node_selector(other, "NotIn", windows_nodes)
        result.append(other)
        for index, piece in enumerate(model.pieces()):
            windows = copy.deepcopy(doc)
            windows["metadata"]["name"] = f"windows-{name}-{index}"
            _node_selector(windows, "In", windows_nodes)
            windows["spec"]["weight"] = max(1, round(piece.share * WEIGHT_SCALE))
            windows["spec"].pop("weightFrom", None)
            windows["spec"]["delay"] = {
                "durationMilliseconds": round(piece.low * 1000),
                "jitterDurationMilliseconds": round(piece.high * 1000),
            }
            result.append(windows)
    return result
