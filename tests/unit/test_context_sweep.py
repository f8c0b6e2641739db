"""The end of a run: the controller's sweep deletes every namespace of the run that is not already going."""

from datetime import UTC, datetime
from types import SimpleNamespace
from unittest import mock

from wincon.cluster.namespaces import RUN_ID, SELECTOR
from wincon.session.context import WinconContext


class _Config:
    def __init__(self, **options):
        self.options = {"wincon_keep": False, "wincon_profile_file": None, "collectonly": False} | options

    def getoption(self, name, default=None):
        return self.options.get(name, default)


class _Core:
    def __init__(self, namespaces):
        self.namespaces, self.deleted, self.selectors = namespaces, [], []

    def list_namespace(self, label_selector, _request_timeout):
        self.selectors.append(label_selector)
        return SimpleNamespace(items=self.namespaces)

    def delete_namespace(self, name, propagation_policy, _request_timeout):
        self.deleted.append(name)


def _namespace(name, terminating):
    since = datetime(2026, 11, 24, tzinfo=UTC) if terminating else None
    return SimpleNamespace(metadata=SimpleNamespace(name=name, deletion_timestamp=since))


def _sweep(core, **options):
    context = WinconContext(_Config(**options), _api_client=object())
    context.config.stash = {}
    with (
        mock.patch("kubernetes.client.CoreV1Api", return_value=core),
        mock.patch("wincon.session.context.get_run_id", return_value="r1"),
    ):
        context.sweep_run()


def test_the_sweep_deletes_the_runs_namespaces_not_already_terminating():
    core = _Core([_namespace("wincon-a", terminating=True), _namespace("wincon-b", terminating=False)])
    _sweep(core)
    assert core.selectors == [f"{SELECTOR},{RUN_ID}=r1"]
    assert core.deleted == ["wincon-b"]  # wincon-a's deletion is under way: not asked again


def test_keep_sweeps_nothing():
    core = _Core([_namespace("wincon-b", terminating=False)])
    _sweep(core, wincon_keep=True)
    assert (core.selectors, core.deleted) == ([], [])
