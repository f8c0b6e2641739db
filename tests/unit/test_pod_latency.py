"""The Windows pod-latency model (wincon.localcluster.latency): parsing, its pieces, and the kwok Stages it writes."""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import pytest
import yaml

from wincon.commandline.errors import UsageError
from wincon.documents import upstream
from wincon.localcluster import cli, cluster, latency, paths
from wincon.localcluster.topology import Topology


def test_two_quantiles_make_three_pieces_and_continue_the_last_slope() -> None:
    model = latency.LatencyModel.parse("p50=30s,p90=54s")
    assert [(p.share, p.low, p.high) for p in model.pieces()] == [
        (0.5, 0.0, 30.0),
        (0.4, 30.0, 54.0),
        (pytest.approx(0.1), 54.0, pytest.approx(60.0)),
    ]
    assert model.quantile(50) == 30.0 and model.quantile(90) == 54.0
    assert model.quantile(99) == pytest.approx(59.4)  # upstream's density test allows 59 s at p99


def test_profile_is_upstream_density_figures() -> None:
    model = latency.LatencyModel.parse("windows-density")
    assert model.quantiles == ((50.0, 30.0), (90.0, 54.0), (99.0, 59.0))
    assert model.spec == "windows-density"


def test_bounds_and_units() -> None:
    model = latency.LatencyModel.parse("min=200ms,p50=1.5s,max=1m")
    assert model.low == pytest.approx(0.2) and model.high == 60.0
    assert [p.share for p in model.pieces()] == [0.5, 0.5]


@pytest.mark.parametrize(
    "text",
    ["", "p50", "p50=30", "p100=30s", "q50=3s", "p50=30s,p90=10s", "min=40s,p50=30s", "p50=30s,max=10s"],
)
def test_invalid_models_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError):
        latency.LatencyModel.parse(text)


def test_sampling_the_pieces_by_weight_reproduces_the_quantiles(tmp_path: Path) -> None:
    # What kwok does with the stages: pick one by weight (Lifecycle.Match), then delay uniformly in
    # [durationMilliseconds, jitterDurationMilliseconds) (Stage.Delay). Simulated here on the stage documents.
    stage_dir = _fake_stage_dir(tmp_path)
    docs = latency.stages(latency.LatencyModel.parse("p50=30s,p90=54s"), ["win2019-0"], stage_dir)
    ready = [d for d in docs if d["metadata"]["name"].startswith("windows-pod-ready-")]
    rng = random.Random(7)
    draws = []
    for _ in range(20000):
        stage = rng.choices(ready, weights=[d["spec"]["weight"] for d in ready])[0]
        delay = stage["spec"]["delay"]
        low, high = delay["durationMilliseconds"], delay["jitterDurationMilliseconds"]
        draws.append((low + rng.random() * (high - low)) / 1000)
    draws.sort()
    assert draws[len(draws) // 2] == pytest.approx(30, abs=1.0)
    assert draws[int(len(draws) * 0.9)] == pytest.approx(54, abs=1.0)


def _fake_stage_dir(root: Path) -> Path:
    """A stand-in for kwok's kustomize/stage directory: each default stage file with its name and a selector."""
    for relative in latency.DEFAULT_STAGE_FILES:
        name = Path(relative).stem
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        doc = {
            "apiVersion": "kwok.x-k8s.io/v1alpha1",
            "kind": "Stage",
            "metadata": {"name": name},
            "spec": {
                "resourceRef": {"apiGroup": "v1", "kind": "Pod" if name.startswith("pod") else "Node"},
                "selector": {"matchExpressions": [{"key": ".metadata.deletionTimestamp", "operator": "Exists"}]},
                "next": {"delete": True},
            },
        }
        path.write_text(yaml.safe_dump(doc))
    return root


def test_stages_keep_the_defaults_and_delay_only_windows_pods(tmp_path: Path) -> None:
    stage_dir = _fake_stage_dir(tmp_path)
    windows = ["win2019-0", "win2022-0"]
    docs = latency.stages(latency.LatencyModel.parse("p50=30s,p90=54s"), windows, stage_dir)
    names = [d["metadata"]["name"] for d in docs]
    for default in ("node-initialize", "node-heartbeat-with-lease", "pod-ready", "pod-complete", "pod-delete"):
        assert default in names
    by_name = {d["metadata"]["name"]: d for d in docs}
    for stage in ("pod-ready", "pod-delete"):
        exprs = by_name[stage]["spec"]["selector"]["matchExpressions"]
        assert {"key": ".spec.nodeName", "operator": "NotIn", "values": windows} in exprs
        assert "delay" not in by_name[stage]["spec"]
        copies = [d for n, d in by_name.items() if n.startswith(f"windows-{stage}-")]
        assert len(copies) == 3
        assert sum(d["spec"]["weight"] for d in copies) == latency.WEIGHT_SCALE
        for doc in copies:
            assert {"key": ".spec.nodeName", "operator": "In", "values": windows} in doc["spec"]["selector"][
                "matchExpressions"
            ]
        assert sorted((d["spec"]["delay"]["durationMilliseconds"], d["spec"]["delay"]["jitterDurationMilliseconds"])
                      for d in copies) == [(0, 30000), (30000, 54000), (54000, 60000)]  # fmt: skip
    assert "nodeName" not in str(by_name["pod-complete"])  # completion of Job pods is not modelled


def test_kwokctl_config_holds_the_stages_only_with_a_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stage_dir = _fake_stage_dir(tmp_path / "stage")
    monkeypatch.setattr(latency, "kwok_stage_dir", lambda module, version, go: stage_dir)
    monkeypatch.setattr(cluster.build, "go_binary", lambda: "go")
    plain = list(yaml.safe_load_all(cluster._kwokctl_config(tmp_path, None, Topology(dataplane="none")).read_text()))
    assert [d["kind"] for d in plain] == ["KwokctlConfiguration"]
    topology = Topology(dataplane="none", windows_pod_latency="p50=30s,p90=54s")
    docs = list(yaml.safe_load_all(cluster._kwokctl_config(tmp_path, None, topology).read_text()))
    assert docs[0]["kind"] == "KwokctlConfiguration"
    assert {d["kind"] for d in docs[1:]} == {"Stage"}
    windows = [d for d in docs[1:] if d["metadata"]["name"].startswith("windows-pod-ready-")]
    assert windows[0]["spec"]["selector"]["matchExpressions"][-1]["values"] == topology.windows_node_names()
    assert topology.windows_node_names() == ["win2022-0", "win2025-0"]  # the default topology's


def test_the_model_is_part_of_the_topology() -> None:
    topology = Topology(windows_pod_latency="windows-density")
    assert Topology.from_dict(topology.to_dict()) == topology
    assert topology != Topology()  # reusing a running cluster with another model is refused (cluster.up)
    with pytest.raises(UsageError):
        Topology(windows_pod_latency="p50=fast")
    args = argparse.Namespace(
        windows_versions=None, windows_nodes=None, linux_nodes=None, windows_taint=None, cni="none",
        dataplane="none", real_nodes=0, windows_pod_latency="p50=30s,p90=54s",
    )  # fmt: skip
    assert cli.topology_from_args(args).windows_pod_latency == "p50=30s,p90=54s"


def test_real_kwok_stage_files() -> None:
    kwok = paths.load_versions()["kwok"]
    upstream.download_module(kwok["module"], kwok["version"], inside="kustomize/stage")  # where the cache lacks it
    stage_dir = latency.kwok_stage_dir(kwok["module"], kwok["version"], cluster.build.go_binary())
    docs = latency.stages(latency.LatencyModel.parse("windows-density"), ["win2022-0"], stage_dir)
    names = {d["metadata"]["name"] for d in docs}
    assert {"node-initialize", "node-heartbeat-with-lease", "pod-ready", "pod-delete", "pod-complete"} <= names
    ready = next(d for d in docs if d["metadata"]["name"] == "windows-pod-ready-0")
    assert "Ready" in ready["spec"]["next"]["statusTemplate"]  # kwok's own template, unchanged
