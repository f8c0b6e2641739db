"""The wincon pytest plugin: its hooks, each small and named after the decision it makes.

The work lives by concern in ``wincon.session``: ``options`` (options, markers), ``context`` (profile, run id,
``WinconContext``, start and sweep of a run), ``fixtures`` (fixtures, ``kube``), ``collection`` (limitations to
marks, plan rows), ``reports`` (reports into verdicts, diagnostics, exit status) and ``verdicts`` (verdict names,
texts, result property keys). The plugin is active for suite runs only (paths under ``suites/``, or ``--wincon``),
so the project's own tests run without a cluster.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import nullcontext
from typing import Any

import pytest

from wincon.clusterinfo import nodes
from wincon.commandline.errors import WinconError, linux_control
from wincon.session import collection, context, controls, options, reports, scheduling
from wincon.session.fixtures import (  # noqa: F401  (fixtures the plugin provides)
    api_client,
    data_plane,
    fresh_namespace,
    kube,
    made_ahead,
    make_priority_class,
    make_runtime_class,
    namespace,
    profile,
    taint_node,
    wincon,
)


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    options.register_markers(config)
    context.die_with_parent(config)  # first: a run whose `wincon run` (or xdist controller) is gone stops here
    if not context.is_suite_run(config):
        return
    controls.configure_distribution(config)
    try:
        context.start_run(config)
    except WinconError as exc:
        pytest.exit(exc.render(), returncode=int(exc.exit_code))
    # What the start loaded (the client's model classes, the profile) lives as long as the process: out of the
    # cyclic collector's way, every later collection (pytest's at unconfigure, the interpreter's at exit) skips it.
    gc.freeze()


def pytest_sessionstart(session: pytest.Session) -> None:
    """Once every plugin and conftest registered its markers: a ``-m`` naming none of them is a usage error."""
    if context.is_suite_run(session.config):
        options.check_mark_expression(session.config)


def pytest_configure_node(node: Any) -> None:
    """xdist: hand the controller's profile and run id to each worker, so discovery happens once; and its pid, so
    the worker dies with it."""
    node.workerinput.update(context.controller_input(node.config))
    if context.get_context(node.config) is not None:
        node.workerinput.update(context.worker_input(node.config))


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist: a suite run with ``--dist worksteal`` (`wincon run`'s) starts its costliest modules first, whole, each
    on the worker with the least cost so far (wincon.session.scheduling); any other run keeps xdist's scheduler."""
    return scheduling.make_scheduler(config, log) if context.is_suite_run(config) else None


def pytest_report_header(config: pytest.Config) -> list[str]:
    return context.header_lines(config)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    controls.parametrize(metafunc)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    if context.is_suite_run(config):  # first: what decides later (image refusals) sees the skip
        options.skip_disruptive(config, items)
    collection.modify_items(config, items)


def pytest_collection_finish(session: pytest.Session) -> None:
    collection.write_plan(session)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """While an item runs, the placement checks record the nodes its pods ran on (its data-plane gate's nodes)."""
    if context.get_profile(item.config) is None:
        yield
        return
    with nodes.running(item), linux_control() if controls.is_control(item) else nullcontext():
        yield


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before any fixture: a check whose image cannot run where its pods go is an error (the plan says so too)."""
    if context.get_profile(item.config) is not None:
        collection.refuse_unrunnable_images(item)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome: Any = yield
    cluster = context.get_profile(item.config)
    if cluster is not None:
        report = outcome.get_result()
        reports.rewrite(item, call, report, cluster)
        if controls.is_control(item):
            controls.record(item, report)
        else:
            controls.judge(item, report)


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if context.get_profile(config) is not None:
        reports.lifted_summary(terminalreporter)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    run = context.get_context(session.config)
    if run is None:
        return
    run.finish()
    session.exitstatus = reports.exit_status(session, int(exitstatus))
