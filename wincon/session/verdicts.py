"""The verdict vocabulary, in one place: verdict names, the "appears lifted" text, result property keys.

The core plugin writes these (report rewriting, ``item.user_properties``); ``wincon.results`` reads them
back (JUnit, dashboard, gate). Both import them from here, so a key or a phrase cannot drift apart.
See DESIGN.md for what each verdict means.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable


class Verdict(str, enum.Enum):
    PASSED = "passed"
    FAILED = "failed"
    XFAILED = "xfailed"
    XPASSED = "xpassed"
    SKIPPED = "skipped"
    ERROR = "error"

    @property
    def blocking(self) -> bool:
        """Whether this verdict makes a run (and TestGrid's cell) fail."""
        return self in (Verdict.FAILED, Verdict.XPASSED, Verdict.ERROR)


# ----------------------------------------------------------------------------- result property keys

# Properties the core plugin puts on suite tests (report.user_properties).
TEST_ID = "test_id"
AREA = "area"
LIMITATION = "limitation"
LIMITATION_TITLE = "limitation_title"
LIFTED = "lifted"
DOC = "doc"
MARKERS = "markers"
FLOW = "flow"
SIMULATED_SKIP = "simulated_skip"
INFRASTRUCTURE_ERROR = "infrastructure_error"
COMMAND = "command"
TARGET_OS = "os"  # the OS whose pods the item checks: windows, or linux for a control
CONTROL = "control"  # the key shared by a Windows check and its Linux control
CONTROL_OUTCOME = "control_outcome"  # on a Windows check: its control's outcome in this run (or "none")
NODE = "node"  # a node the item's pods ran on (once per node): the data-plane gate judges these nodes
STEP = "step"  # where a failed phase failed (controls.failed_step): a control speaks for its twin on that step only
CONTROL_HIT = "control_hit"  # on a Windows check: what its control failed on, where that was another step
CLUSTER_WIDE_ERROR = "cluster_wide"  # "true" on a Windows check its control's failure of the same step explains
SUITE_ERROR = "suite_error"  # "true" where the suite's own gap (image, script, parser) ended the check
ISOLATION = "isolation"  # the isolation the check's pods ask for (marker isolation(kind)): hyperv; absent: process
ISOLATION_OBSERVED = (
    "isolation_observed"  # "node=process|hyperv": what a check saw its pod run in (nodes.observe_isolation)
)

# In the order they are shown.
KNOWN_PROPERTIES = (
    TEST_ID,
    AREA,
    LIMITATION,
    LIMITATION_TITLE,
    LIFTED,
    DOC,
    MARKERS,
    FLOW,
    SIMULATED_SKIP,
    INFRASTRUCTURE_ERROR,
    COMMAND,
    TARGET_OS,
    CONTROL,
    CONTROL_OUTCOME,
    NODE,
    STEP,
    CONTROL_HIT,
    CLUSTER_WIDE_ERROR,
    SUITE_ERROR,
    ISOLATION,
    ISOLATION_OBSERVED,
)
# Properties that may appear more than once (a test can cite several documents or limitations).
MULTI_PROPERTIES = frozenset({DOC, LIMITATION, LIMITATION_TITLE, COMMAND, NODE, ISOLATION_OBSERVED})

# ----------------------------------------------------------------------------- texts

LIFTED_PHRASE = "appears lifted"
STRICT_XPASS = "[XPASS(strict)]"  # pytest's text for a strict xfail that passed
INFRASTRUCTURE_PREFIX = "infrastructure error (not a node failure)"
SIMULATED_REASON = "simulated nodes have no data plane (kwok): the check needs containers that really run"


def lifted_message(ids: str | Iterable[str]) -> str:
    """``limitation <ids> appears lifted on this cluster``: the one-line message of an xpassed verdict."""
    text = ids if isinstance(ids, str) else ", ".join(ids)
    return f"limitation {text} {LIFTED_PHRASE} on this cluster"


def is_lifted(text: str) -> bool:
    """Whether a failure text is an xpassed verdict (ours, or pytest's own strict-xpass text)."""
    return STRICT_XPASS in text or LIFTED_PHRASE in text
