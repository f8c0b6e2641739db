"""The project's own tests: unit/ needs nothing; integration/ needs the local cluster.

The session hooks that stop the integration tests' local cluster live here, not in integration/conftest.py:
under pytest-xdist the controller collects nothing, so only this conftest (of the path given on the command
line) is loaded there, and only the controller knows that every worker is done.
"""

from __future__ import annotations

import os
import signal
import uuid

import pytest

# xdist_groups: `--dist loadgroup` keeps each xdist_group on one worker under pytest 9.2 too (see its docstring);
# ordering: the heaviest tests start first (marker weight) and the marker measures_cpu (see its docstring).
pytest_plugins = ["pytester", "tests.support.xdist_groups", "tests.support.ordering"]

# The tests interrupt the runs they start with SIGINT, as a user's Ctrl-C would. A background job of a
# non-interactive shell starts with SIGINT ignored, and an ignored signal stays ignored in every child: those runs
# would never see it (CI started that way failed the three interrupt tests). Catching it here makes the children
# start with the default again (a caught signal is reset at exec).
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_configure(config: pytest.Config) -> None:
    from tests.integration.conftest import SESSION_ENV

    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist)
        os.environ[SESSION_ENV] = uuid.uuid4().hex


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop the local cluster if this test session started it (after every worker is done)."""
    if hasattr(session.config, "workerinput"):
        return
    from tests.integration.conftest import SESSION_ENV, STARTED_MARKER, session_cluster_name
    from wincon.localcluster import cluster, paths

    name = session_cluster_name()
    try:
        started_by = (paths.state_dir(name) / STARTED_MARKER).read_text().strip()
    except OSError:
        return
    if started_by == os.environ.get(SESSION_ENV):
        cluster.down(name)
