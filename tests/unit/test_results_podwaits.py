"""A run's pod waits (issue 22, item 6): the ledger the suite writes, its figures, and finished.json's metadata."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from wincon.cluster import waits
from wincon.commandline.errors import ExitCode
from wincon.results import podwaits, runner

from .test_results_runner import run_dir


def _pod(node: str, os_name: str | None = None, selector: str | None = None) -> SimpleNamespace:
    spec = SimpleNamespace(
        node_name=node,
        os=SimpleNamespace(name=os_name) if os_name else None,
        node_selector={"kubernetes.io/os": selector} if selector else None,
    )
    return SimpleNamespace(spec=spec)


def test_record_wait_appends_one_line_per_wait_only_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger = tmp_path / "artifacts" / "pod-waits.jsonl"
    monkeypatch.delenv(podwaits.LEDGER_ENV, raising=False)
    waits.record_wait("ns", "p0", _pod("win2022-0", "windows"), 1.0, 2.0)
    assert not ledger.exists()
    monkeypatch.setenv(podwaits.LEDGER_ENV, str(ledger))
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "suites/networking/test_pods.py::test_x (setup)")
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    waits.record_wait("ns", "p0", _pod("win2022-0", "windows"), 1.0, 2.5)
    waits.record_wait("ns", "p1", _pod("worker-0", selector="linux"), 1.5, 2.0)
    waits.record_wait("ns", "p2", None, 3.0, 4.0)  # the wait failed: no pod to read
    recorded = podwaits.load(ledger)
    assert [(w.pod, w.node, w.os, w.ok, w.worker) for w in recorded] == [
        ("p0", "win2022-0", "windows", True, "gw1"),
        ("p1", "worker-0", "linux", True, "gw1"),
        ("p2", "", "", False, "gw1"),
    ]
    assert recorded[0].area == "suites/networking"


def test_wait_for_pod_records_its_wait(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger = tmp_path / "ledger.jsonl"
    monkeypatch.setenv(podwaits.LEDGER_ENV, str(ledger))
    pod = _pod("win2019-0", "windows")
    monkeypatch.setattr(waits, "wait_for", lambda *a, **k: pod)
    assert waits.wait_for_pod(object(), "ns", "server-0") is pod  # type: ignore[arg-type]

    def times_out(*a: object, **k: object) -> None:
        raise waits.WaitTimeout("pod ns/server-1 did not become ready within 1s", "")

    monkeypatch.setattr(waits, "wait_for", times_out)
    with pytest.raises(waits.WaitTimeout):
        waits.wait_for_pod(object(), "ns", "server-1")  # type: ignore[arg-type]
    assert [(w.pod, w.ok) for w in podwaits.load(ledger)] == [("server-0", True), ("server-1", False)]


def _wait(pod: str, start: float, end: float, worker: str = "gw0", os_name: str = "windows", test: str = "") -> dict:
    return {
        "namespace": "ns", "pod": pod, "node": "n", "os": os_name, "start": start, "end": end, "ok": True,
        "test": test or "suites/node/test_a.py::test_b (call)", "worker": worker,
    }  # fmt: skip


def test_summary_counts_pods_and_measures_the_waits(tmp_path: Path) -> None:
    ledger = tmp_path / "l.jsonl"
    lines = [
        _wait("a", 0, 30),
        _wait("b", 10, 40),  # overlaps a on the same worker: created together, awaited together
        _wait("a", 50, 51),  # the same pod awaited again: one pod
        _wait("c", 0, 20, worker="gw1", os_name="linux", test="suites/networking/test_x.py::test_y (setup)"),
        _wait("d", 100, 110, worker="gw1", os_name=""),
    ]
    ledger.write_text("\n".join(json.dumps(x) for x in lines) + "\nnot json\n")
    figures = podwaits.summary(podwaits.load(ledger), wall_seconds=200.0)
    assert (figures["pods"], figures["windows_pods"], figures["linux_pods"], figures["other_pods"]) == (4, 2, 1, 1)
    assert figures["waits"] == 5
    assert figures["wait_seconds"] == pytest.approx(40 + 1 + 10)  # [0,40] + [50,51] + [100,110]
    assert figures["critical_path_seconds"] == pytest.approx(41)  # gw0: [0,40] + [50,51]; gw1: 20 + 10
    assert figures["share"] == pytest.approx(51 / 200)
    assert figures["by_area"] == {"suites/networking": {"linux": 1}, "suites/node": {"windows": 2, "unknown": 1}}
    meta = podwaits.metadata(figures)
    assert meta["pods-waited"] == "4" and meta["windows-pods-waited"] == "2" and meta["wall-time-seconds"] == "200.0"
    assert all(isinstance(v, str) for v in meta.values())


def test_union_of_nothing_is_zero() -> None:
    assert podwaits.union_seconds([]) == 0.0
    assert podwaits.summary([])["critical_path_seconds"] == 0.0


def test_wincon_run_puts_wall_time_and_pod_waits_into_finished_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen_env: list[str | None] = []

    def fake_pytest(command: list[str]) -> int:
        seen_env.append(os.environ.get(podwaits.LEDGER_ENV))
        results = Path(command[command.index("--results-dir") + 1])
        run_dir(results, "SUCCESS", {"passed": 1}, "<testsuites name='x'/>")
        waits.record_wait("ns", f"pod-{len(seen_env)}", _pod("win2022-0", "windows"), 10.0, 12.0)
        return 0

    monkeypatch.setattr(runner, "_run_pytest", fake_pytest)
    monkeypatch.delenv(podwaits.LEDGER_ENV, raising=False)
    results = tmp_path / "results" / "r1"
    assert runner.run(results, ["--", "suites"], reports=False) == ExitCode.OK
    ledger = str(results.resolve() / "artifacts" / podwaits.LEDGER_NAME)
    assert seen_env == [ledger, ledger]  # both phases write to the run's ledger
    assert podwaits.LEDGER_ENV not in os.environ
    metadata = json.loads((results / "finished.json").read_text())["metadata"]
    assert metadata["pods-waited"] == "2" and metadata["windows-pods-waited"] == "2"
    assert metadata["pod-wait-seconds"] == "2.0"
    assert float(metadata["wall-time-seconds"]) >= 0 and "pod-wait-share" in metadata
    assert metadata["verdicts"] == {"passed": "2"}  # the phases' merge stands


def test_the_dashboard_run_page_shows_wall_time_and_pod_waits(tmp_path: Path) -> None:
    from tests.support import synthetic
    from wincon.results import artifacts
    from wincon.results.dashboard import build_data, load_runs, run_timing
    from wincon.results.model import Verdict

    root = tmp_path / "results"
    for name, start in (("old", 100), ("new", 200)):
        artifacts.write_run(
            root / name,
            [synthetic.case("suites/node/test_a.py::test_b", Verdict.PASSED, area="node")],
            start=start,
            result="SUCCESS",
            build_id=str(start),
        )
    finished = root / "new" / "finished.json"
    doc = json.loads(finished.read_text())
    doc["metadata"].update(
        podwaits.metadata(podwaits.summary([podwaits.Wait("ns", "p", "n", "windows", 0, 30, True, "t", "gw0")], 600.0))
    )
    finished.write_text(json.dumps(doc))
    runs = {r["label"]: r for r in build_data(load_runs([root]).runs)["runs"]}
    assert runs["new"]["timing"] == {
        "wall": 600.0, "pods": 1.0, "windows_pods": 1.0, "linux_pods": 0.0, "wait": 30.0, "critical_path": 30.0,
        "share": 0.05,
    }  # fmt: skip
    assert runs["old"]["timing"] is None  # a run that recorded none says so instead of zeros
    assert run_timing({"wall-time-seconds": "12.5"}) == {"wall": 12.5}
    app = (Path(__file__).resolve().parents[2] / "wincon" / "results" / "static" / "app.js").read_text()
    assert "timingCells(run.timing)" in app and "waiting for pods" in app
