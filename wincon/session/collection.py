"""Collection: markers checked, limitations turned into xfail/skip marks for this cluster, plan rows.

Every decision is made at collection time from the profile, so `wincon plan` shows exactly what a run
will do, and why, before anything touches the cluster.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wincon.clusterinfo import capabilities, nodes
from wincon.clusterinfo.nodes import candidate_nodes
from wincon.clusterinfo.profile import ClusterProfile
from wincon.commandline.errors import DeviationObserved, InfrastructureError
from wincon.documents import limitations as limitations_mod
from wincon.documents import sources
from wincon.session import controls
from wincon.session.context import IMAGES_NOTE_KEY, get_image_refusals, get_limitations, get_profile
from wincon.session.options import AREAS, MARKERS
from wincon.session.verdicts import AREA, DOC, ISOLATION, LIMITATION, LIMITATION_TITLE, SIMULATED_REASON, TEST_ID
from wincon.windows import forms

APPLIED_KEY = pytest.StashKey[list]()  # per item: [(Limitation, Match)] that apply
CANDIDATES_KEY = pytest.StashKey[list]()  # per item: [(Limitation, Match)] referenced, applying or not
PLACEMENT_KEY = pytest.StashKey[Any]()  # per item marked avoids(rule): its rule's Placement on the profile
IMAGE_REFUSAL_KEY = pytest.StashKey[str]()  # per item: why an image of the suite cannot run where its pods go


def modify_items(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Reject unknown markers and limitation ids; record each test's identity; mark what applies here."""
    limitations = get_limitations(config)
    profile = get_profile(config)
    if limitations is not None or config.getoption("wincon_lint_out"):
        reject_unknown_markers(items, config)
    for item in items:
        record_identity(item)
        controls.mark(item, profile)
        forms.apply(item)
        if profile is not None:
            capabilities.skip_missing(item, profile)
            apply_placement(item, profile)
        if limitations is None:
            continue
        check_limitation_ids(item, limitations, config)
        if profile is not None and not nodes.is_control(item):  # a limitation is Windows's, never a control's
            apply_limitations(item, limitations, profile)
            skip_hybrid_without_linux(item, profile)
            apply_image_refusals(item, profile, get_image_refusals(config))


def reject_unknown_markers(items: list[pytest.Item], config: pytest.Config) -> None:
    """A misspelt marker silently drops a test from `-m` selections: stop the run instead."""
    known = {line.split(":", 1)[0].split("(", 1)[0].strip() for line in config.getini("markers")}
    for item in items:
        for marker in item.iter_markers():
            if marker.name not in known:
                raise pytest.UsageError(
                    f"wincon: error: {item.nodeid} uses unknown marker {marker.name!r}\n"
                    f"  fix: use one of: {', '.join(sorted(k for k in known if k in MARKERS or k in AREAS))}"
                    " (see `pytest --markers`)"
                )


def record_identity(item: pytest.Item) -> None:
    marker = item.get_closest_marker("test_id")
    if marker and marker.args:
        item.user_properties.append((TEST_ID, str(marker.args[0])))
    area = next((m.name for m in item.iter_markers() if m.name in AREAS), None)
    if area is None:
        parts = Path(str(item.path)).parts[:-1]
        area = parts[parts.index("suites") + 1] if "suites" in parts[:-1] else "other"
    item.user_properties.append((AREA, area))
    if pod_isolation(item) != "process":  # what the check asks for; wincon.results.execution compares what it saw
        item.user_properties.append((ISOLATION, pod_isolation(item)))
    for seed in sources.cited_seeds(item):  # the documents markers' seed files
        item.user_properties.append((DOC, seed))


def check_limitation_ids(item: pytest.Item, limitations: dict[str, Any], config: pytest.Config) -> None:
    for marker in item.iter_markers("limitation"):
        if not marker.args or marker.args[0] not in limitations:
            path = config.getoption("wincon_limitations") or limitations_mod.DEFAULT_PATH
            raise pytest.UsageError(
                f"wincon: error: {item.nodeid} references limitation {marker.args[0] if marker.args else '(none)'!r}, "
                f"which {path} does not define\n  fix: use an id from `wincon limitations`, or add the entry"
            )


def pod_isolation(item: pytest.Item) -> str:
    """The isolation the test's pods request: ``@pytest.mark.isolation("hyperv")``, else process."""
    marker = item.get_closest_marker("isolation")
    return str(marker.args[0]) if marker and marker.args else "process"


def apply_limitations(item: pytest.Item, limitations: dict[str, Any], profile: ClusterProfile) -> None:
    candidates, applied = [], []
    nodes, isolation = candidate_nodes(item, profile), pod_isolation(item)
    for marker in item.iter_markers("limitation"):
        lim = limitations[marker.args[0]]
        result = limitations_mod.match(lim, profile, isolation=isolation, nodes=nodes)
        candidates.append((lim, result))
        if result.applies:
            applied.append((lim, result))
    item.stash[CANDIDATES_KEY] = candidates
    item.stash[APPLIED_KEY] = applied
    for lim, result in applied:
        item.user_properties.append((LIMITATION, lim.id))
        item.user_properties.append((LIMITATION_TITLE, lim.title))
        if lim.mode == "skip":
            item.add_marker(pytest.mark.skip(reason=f"limitation {lim.id}: {lim.skip_reason} [{result.explain()}]"))
        else:
            item.add_marker(
                pytest.mark.xfail(
                    reason=f"limitation {lim.id}: {lim.title} [{result.explain()}]",
                    strict=True,
                    raises=DeviationObserved,  # only the check's own observation; never a crash or a refusal
                )
            )


def apply_placement(item: pytest.Item, profile: ClusterProfile) -> None:
    """``@pytest.mark.avoids(rule)``: the rule (wincon.checks.scheduling.AVOIDS) decides from the profile what the
    check decides before creating anything, on the same nodes (scheduling.placement_nodes: the Ready Windows nodes
    of its build, or a Linux control's Linux nodes): a skip becomes a skip mark, so the run takes it at setup and
    the plan says it; the placement is kept for the plan."""
    from wincon.checks.scheduling import AVOIDS, placement_nodes

    for marker in item.iter_markers("avoids"):
        rule = str(marker.args[0]) if marker.args else ""
        if rule not in AVOIDS:
            raise pytest.UsageError(
                f"wincon: error: {item.nodeid} avoids unknown rule {rule!r}\n  fix: use one of {', '.join(AVOIDS)}"
            )
        build = None
        if "build" in getattr(item, "fixturenames", ()):  # the build fixture's choice (suites/conftest.py)
            build = nodes.build_for(
                item.nodeid, sorted({n.windows_build for n in profile.ready_windows_nodes if n.windows_build})
            )
        placement = AVOIDS[rule](placement_nodes(profile, nodes.target_os(item), build))
        item.stash[PLACEMENT_KEY] = placement
        if placement.skip is not None:
            item.add_marker(pytest.mark.skip(reason=placement.skip))
            return


def apply_image_refusals(item: pytest.Item, profile: ClusterProfile, refused: list[Any]) -> None:
    """A Windows data-plane check none of whose skips applies, whose pods go to real nodes where an image its code
    names (wincon.workloads.imageuse) cannot run under the isolation it requests (wincon.workloads.imageverify.preflight, read once at
    the start): an error at setup, before any pod (:func:`refuse_unrunnable_images`); the plan says the same."""
    if not refused or not item.get_closest_marker("dataplane") or item.get_closest_marker("skip") is not None:
        return
    if item.get_closest_marker("no_pod") is not None:
        return  # it runs no image (declared; `wincon lint` holds the declaration to its code: no_pod_problem)
    if nodes.data_plane_where(item, profile) != nodes.REAL:
        return
    names, isolation = {n.name for n in candidate_nodes(item, profile)}, pod_isolation(item)
    mine = [f for f in refused if f.node in names and f.isolation == isolation]
    if not mine:
        return
    from wincon.workloads.imageuse import images_of, windows_catalog_keys
    from wincon.workloads.imageverify import refusal_message

    # Asked with every Windows key of the catalog: a check naming only images that run there is not refused; one
    # whose code names none could use any (wincon.workloads.imageuse's rule): every refusal of its nodes applies to it.
    used = images_of(item, windows_catalog_keys())
    if used is not None:
        mine = [f for f in mine if f.image in used]
    if mine:
        item.stash[IMAGE_REFUSAL_KEY] = refusal_message(mine, read=used is not None)


def refuse_unrunnable_images(item: pytest.Item) -> None:
    """At setup, before any fixture creates a pod: the error :func:`apply_image_refusals` planned."""
    refusal = item.stash.get(IMAGE_REFUSAL_KEY, None)
    if refusal:
        from wincon.workloads.imageverify import REFUSAL_FIX

        raise InfrastructureError(refusal, REFUSAL_FIX)


def skip_hybrid_without_linux(item: pytest.Item, profile: ClusterProfile) -> None:
    if item.get_closest_marker("hybrid") and not any(n.ready for n in profile.linux_nodes):
        item.add_marker(pytest.mark.skip(reason="hybrid check needs a Ready Linux worker node; the cluster has none"))


def write_plan(session: pytest.Session) -> None:
    """For `wincon plan` and `wincon lint`: write what each collected test will do, and why."""
    config = session.config
    out = config.getoption("wincon_plan_out") or config.getoption("wincon_lint_out")
    if not out:
        return
    rows = [plan_row(item, get_profile(config)) for item in session.items]
    images = config.stash.get(IMAGES_NOTE_KEY, "")  # what the image preflight did (read, skipped and why)
    Path(out).write_text(json.dumps({"profile": _profile_dict(config), "images": images, "tests": rows}, indent=1))


def _profile_dict(config: pytest.Config) -> dict[str, Any] | None:
    profile = get_profile(config)
    return profile.to_dict() if profile else None


def plan_row(item: pytest.Item, profile: ClusterProfile | None) -> dict[str, Any]:
    """run / skip / xfail for one collected test on this profile, with the reason and limitations."""
    marker_names = sorted({m.name for m in item.iter_markers()})
    test_ids = [str(m.args[0]) for m in item.iter_markers("test_id") if m.args]
    referenced = [str(m.args[0]) for m in item.iter_markers("limitation") if m.args]
    applied = item.stash.get(APPLIED_KEY, [])
    limitations = [{"id": lim.id, "title": lim.title, "mode": lim.mode, "facts": list(m.facts)} for lim, m in applied]
    # Referenced but not applied because a fact is unknown: the plan says so instead of staying silent.
    unknown = [
        {"id": lim.id, "unknown": list(m.unknown), "facts": list(m.facts)}
        for lim, m in item.stash.get(CANDIDATES_KEY, [])
        if m.unknown and not m.applies
    ]
    skip = next((m for m in item.iter_markers("skip")), None)
    xfail = next((m for m in item.iter_markers("xfail")), None)
    # The nodes its pods may land on: all real -> it runs; none -> it skips; some -> placement decides (the run
    # judges the nodes they ran on, nodes.data_plane_for), and the reason says so.
    where = nodes.REAL
    placement = item.stash.get(PLACEMENT_KEY, None)
    pinned = placement.node if placement is not None else None
    if profile is not None and item.get_closest_marker("dataplane"):
        where = nodes.data_plane_where(item, profile)
        node = nodes.lookup(profile, pinned) if pinned else None
        if node is not None:  # the check pins its pod there: that node decides
            where = nodes.REAL if node.data_plane else nodes.SIMULATED
    refusal = item.stash.get(IMAGE_REFUSAL_KEY, None)
    if skip is not None:
        outcome, reason = "skip", skip.kwargs.get("reason", skip.args[0] if skip.args else "")
    elif refusal:  # the run raises it at setup: an infrastructure error, before any pod
        outcome, reason = "error", refusal
    elif where == nodes.SIMULATED:
        outcome, reason = "skip", SIMULATED_REASON
        if limitations:
            reason += "; on a real cluster with this profile: expected failure " + ", ".join(
                f"{lim['id']} ({', '.join(lim['facts'])})" for lim in limitations
            )
    elif xfail is not None:
        outcome, reason = "xfail", xfail.kwargs.get("reason", "")
    else:
        outcome, reason = "run", ""
    notes = [reason]  # the reason, then what the plan adds to it, joined once below
    if outcome != "skip":
        if where == nodes.MIXED and profile is not None:
            notes.append(nodes.mixed_note(item, profile))
        if profile is not None:
            notes.append(capabilities.plan_note(item, profile))
            # A run-time fact: the run may still skip.
            notes += [f"decided at run time: {m.args[0]}" for m in item.iter_markers("decided_at_run_time")]
        notes.append(forms.unrecorded_note(item))
        if placement is not None:
            notes.append(
                placement.plan_note()
                or (
                    f"its pod is pinned to {pinned}: the other "
                    f"{'nodes of its build' if nodes.target_os(item) == 'windows' else 'Linux nodes'} "
                    "cannot tell its result"
                    if pinned
                    else ""
                )
            )
    if unknown:
        notes.append("; ".join(f"limitation {u['id']} not applied: {', '.join(u['unknown'])} unknown" for u in unknown))
    reason = "; ".join(note for note in notes if note)
    function = getattr(item, "function", None)
    return {
        "test_id": test_ids[0] if test_ids else None,
        "test_ids": test_ids,
        "nodeid": item.nodeid,
        "function": f"{item.path}::{getattr(item, 'originalname', item.name)}",
        "doc": (function.__doc__ or "").strip() if function else "",
        "documents": [list(cited) for cited in sources.citations(item)],
        "markers": marker_names,
        "referenced_limitations": referenced,
        "outcome": outcome,
        "reason": reason,
        "limitations": limitations,
        "unknown_facts": unknown,
        **controls.plan_fields(item),
        **forms.plan_fields(item),
        "no_pod_problem": no_pod_problem(item),
    }


def no_pod_problem(item: pytest.Item) -> str | None:
    """Where a check declares ``no_pod`` but its code names a catalog image (wincon.workloads.imageuse), what `wincon lint`
    says: the declaration would exempt a check that runs that image from the image preflight's refusals."""
    if item.get_closest_marker("no_pod") is None:
        return None
    from wincon.workloads.imageuse import images_of, windows_catalog_keys

    named = images_of(item, windows_catalog_keys())
    if not named:
        return None
    return (
        f"no_pod declared, but its code names the catalog image(s) {', '.join(sorted(named))}: drop the marker "
        "(the image preflight then judges its pods), or the image from its code"
    )
