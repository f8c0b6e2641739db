"""xdist spreads the parallel phase by its cost (issue 44, item 4): wincon.session.scheduling's weights and first
distribution, and its worksteal scheduler driven by fake workers (no cluster, no xdist workers)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from wincon.results import junit
from wincon.results.model import CaseResult, Verdict
from wincon.session import scheduling

CTRL = "suites/controllers/test_deployments.py"
NET = "suites/networking/test_dns.py"
API = "suites/api/test_objects.py"
NODE = "suites/node/test_density.py"

COLLECTION = [
    f"{API}::test_a",
    f"{API}::test_b",
    f"{NET}::test_c[linux]",
    f"{NET}::test_c[windows]",
    f"{NET}::test_d[linux]",
    f"{NET}::test_d[windows]",
    f"{CTRL}::test_rolling",
    f"{CTRL}::test_scale",
    f"{CTRL}::test_order",
    f"{NODE}::test_e",
]


def test_static_weights_count_a_windows_pod_start_per_check_and_a_linux_one_per_control() -> None:
    weights = scheduling.module_weights(COLLECTION)
    assert weights == {API: 60.0, NET: 3 + 30 + 3 + 30, CTRL: 90.0, NODE: 30.0}
    assert scheduling.module_of(f"{NET}::test_c[windows]@dns") == NET


def test_seconds_weights_are_the_sum_of_the_tests_known_seconds_and_the_static_weight_of_the_rest() -> None:
    seconds = {f"{CTRL}::test_rolling": 100.0, f"{CTRL}::test_scale": 40.0, f"{NET}::test_c[windows]": 0.2,
               f"{API}::test_a": 1.5, "suites/gone/test_x.py::test_y": 9.0}  # fmt: skip
    weights = scheduling.module_weights([*COLLECTION[:3], f"{NET}::test_c[windows]@dns", *COLLECTION[4:]], seconds)
    # test_order is not in the run: its static 30 s; a Windows check that took 0.2 s weighs 0.2 s, not 30
    assert weights == {API: 1.5 + 30, NET: 3 + 0.2 + 3 + 30, CTRL: 100 + 40 + 30, NODE: 30.0}


def test_plan_starts_the_costliest_modules_first_each_whole_on_the_least_loaded_worker() -> None:
    weights = {CTRL: 300.0, NET: 100.0, API: 90.0, NODE: 20.0}
    queues = scheduling.plan(COLLECTION, 2, weights)
    named = [[COLLECTION[i] for i in queue] for queue in queues]
    # worker 0: the controllers (300); worker 1: networking (100), then the API (190 in all), then node (210)
    assert named[0] == [f"{CTRL}::test_rolling", f"{CTRL}::test_scale", f"{CTRL}::test_order"]
    assert named[1] == COLLECTION[2:6] + COLLECTION[0:2] + [f"{NODE}::test_e"]
    assert sorted(i for q in queues for i in q) == list(range(len(COLLECTION)))  # every test once: none added
    # more workers than modules: the spare ones start empty (they steal); one worker: costliest first
    assert [len(q) for q in scheduling.plan(COLLECTION, 6, weights)] == [3, 4, 2, 1, 0, 0]
    one = scheduling.plan(COLLECTION, 1, weights)[0]
    assert [scheduling.module_of(COLLECTION[i]) for i in one] == [CTRL] * 3 + [NET] * 4 + [API] * 2 + [NODE]


def test_plan_keeps_collection_order_on_ties() -> None:
    queues = scheduling.plan(COLLECTION, 4, dict.fromkeys((API, NET, CTRL, NODE), 1.0))
    assert [scheduling.module_of(COLLECTION[q[0]]) for q in queues] == [API, NET, CTRL, NODE]


def _junit(path: Path, seconds: dict[str, float]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    cases = [CaseResult(name=nodeid, verdict=Verdict.PASSED, duration=s) for nodeid, s in seconds.items()]
    path.write_bytes(junit.to_xml(cases))
    return path


def test_the_last_runs_junit_is_the_newest_run_beside_this_one_or_the_file_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(scheduling.COST_JUNIT_ENV, raising=False)
    results = tmp_path / "results"
    old = _junit(results / "r1" / "artifacts" / "junit_wincon_1_01.xml", {f"{CTRL}::test_scale": 10})
    new = [
        _junit(results / "r2" / "artifacts" / f"junit_wincon_2_0{n}.xml", {f"{CTRL}::test_scale": 20}) for n in (1, 2)
    ]
    own = _junit(results / "r3" / "artifacts" / "junit_wincon_3_01.xml", {f"{CTRL}::test_scale": 30})  # this run's
    for when, path in ((1, old), (2, new[0]), (3, own)):
        os.utime(path, (when, when))
    os.utime(new[1], (2, 2))
    assert scheduling.last_junit(str(results / "r3")) == new  # both phases' files of the newest other run
    assert scheduling.junit_seconds(new) == {f"{CTRL}::test_scale": 20.0}
    assert scheduling.last_junit(str(tmp_path / "elsewhere" / "r9")) == []
    assert scheduling.last_junit(None) == []
    monkeypatch.setenv(scheduling.COST_JUNIT_ENV, str(old))
    assert scheduling.last_junit(str(results / "r3")) == [old]
    monkeypatch.setenv(scheduling.COST_JUNIT_ENV, str(tmp_path / "missing.xml"))
    assert scheduling.last_junit(str(results / "r3")) == []


def test_an_unreadable_junit_or_table_weighs_nothing(tmp_path: Path) -> None:
    broken = tmp_path / "junit_x_01.xml"
    broken.write_text("<testsuites><testcase name=")
    assert scheduling.junit_seconds([broken, tmp_path / "missing.xml"]) == {}
    assert scheduling.table_seconds(tmp_path / "missing.json") == {}
    (tmp_path / "t.json").write_text('{"seconds": [1, 2]}')
    assert scheduling.table_seconds(tmp_path / "t.json") == {}


def test_the_committed_table_names_its_source_and_weighs_the_suites_tests() -> None:
    data = json.loads(scheduling.TABLE.read_text())
    assert "bench_run.py" in data["source"] and "p50=30s" in data["source"]
    seconds = scheduling.table_seconds()
    assert len(seconds) > 400 and all(k.startswith("suites/") and "::" in k for k in seconds)
    assert all(v >= 0 for v in seconds.values())


class FakeWorker:
    def __init__(self, name: str) -> None:
        self.name, self.shutting_down, self.sent, self.steals = name, False, [], []  # type: ignore[var-annotated]
        self.gateway = SimpleNamespace(id=name)

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)

    def send_steal(self, indices: list[int]) -> None:
        self.steals.append(list(indices))

    def shutdown(self) -> None:
        self.shutting_down = True


def _config(dist: str, results_dir: str | None = None) -> Any:
    values = {"tx": ["2*popen"], "dist": dist}
    return SimpleNamespace(
        getvalue=values.__getitem__,
        getoption=lambda name, default=None: results_dir if name == "wincon_results_dir" else default,
    )


def test_the_scheduler_sends_each_worker_its_plan_and_steals_from_the_longest_queue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(scheduling.COST_JUNIT_ENV, str(_junit(tmp_path / "junit_x_01.xml", {f"{NODE}::test_e": 500})))
    monkeypatch.setattr(scheduling, "TABLE", tmp_path / "no-table.json")
    assert scheduling.make_scheduler(_config("loadscope"), None) is None  # other modes: xdist's own
    sched = scheduling.make_scheduler(_config("worksteal"), SimpleNamespace(workstealsched=lambda *a: None))
    workers = [FakeWorker("gw0"), FakeWorker("gw1")]
    for worker in workers:
        sched.add_node(worker)
    for worker in workers:
        sched.add_node_collection(worker, COLLECTION)
    assert sched.collection_is_completed
    sched.schedule()
    # the last run made the density module the costliest (500 s): it starts first, alone on gw0
    assert [COLLECTION[i] for i in workers[0].sent] == [f"{NODE}::test_e"]
    assert [scheduling.module_of(COLLECTION[i]) for i in workers[1].sent] == [CTRL] * 3 + [NET] * 4 + [API] * 2
    assert sched.collection == COLLECTION and not sched.pending
    # gw0 idles at once (fewer than 2 queued): it asks gw1 for the second half of its queue, the cheapest modules
    assert workers[1].steals == [workers[1].sent[-4:]]
    sched.remove_pending_tests_from_node(workers[1], workers[1].sent[-4:])
    assert workers[0].sent[1:] == workers[1].sent[-4:]
    for worker in workers:
        for index in list(sched.node2pending[worker]):
            sched.mark_test_complete(worker, index)
    assert not sched.has_pending  # every test ran once, none twice
    assert sorted(workers[0].sent + workers[1].sent[:-4]) == list(range(len(COLLECTION)))
