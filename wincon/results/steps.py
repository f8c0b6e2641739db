"""Allure steps for the three phases of every check: deploy, wait, check.

Framework helpers wrap their work in these, so each test's Allure page reads as the documented
sentence it checks: what was deployed, what was waited for, and the exact check command::

    with steps.deploy("netexec pod on a Windows node"):
        ...
    with steps.wait("pod Ready on a Windows node"):
        ...
    with steps.check("curl.exe http://10.0.0.12:9080 --connect-timeout 10 --fail"):
        ...

Without ``--alluredir`` a step costs a log line and nothing else. A step that raises is marked
failed (or broken) in the report, so the phase that failed is visible at a glance.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

import allure

PHASES = ("deploy", "wait", "check")
log = logging.getLogger("wincon.steps")


@contextlib.contextmanager
def step(phase: str, what: str) -> Iterator[None]:
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {PHASES}, not {phase!r}")
    title = f"{phase}: {what}"
    log.info(title)
    with allure.step(title):
        yield


def deploy(what: str) -> contextlib.AbstractContextManager[None]:
    return step("deploy", what)


def wait(what: str) -> contextlib.AbstractContextManager[None]:
    return step("wait", what)


def check(what: str) -> contextlib.AbstractContextManager[None]:
    return step("check", what)


def attach_text(name: str, text: str) -> None:
    """Attach a text (a describe, events, a pod log) to the current test or step of the Allure report."""
    allure.attach(text, name=name, attachment_type=allure.attachment_type.TEXT)
