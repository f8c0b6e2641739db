"""Jobs and CronJobs of Windows pods."""

from __future__ import annotations

import pytest

from wincon.checks.controllers import Invariant, cronjob_succeeded, job_complete, job_failure
from wincon.checks.pods import assert_all_ran_on
from wincon.cluster.client import call
from wincon.cluster.waits import wait_for
from wincon.windows import forms

pytestmark = [pytest.mark.controllers]

CRON_WAIT_SECONDS = 80  # the next minute boundary, plus a margin for the controller to start the Job


def ran_to_completion(kube, namespace: str, pods, output: str) -> None:
    """Positive evidence that each pod's container ran: exit code 0 and the command's own output in its log
    (a simulated node marks pods Succeeded without running anything)."""
    for pod in pods:
        state = pod.status.container_statuses[0].state.terminated if pod.status.container_statuses else None
        assert state is not None and state.exit_code == 0, f"pod {pod.metadata.name}: {state}"
        log = call(kube.core.read_namespaced_pod_log, pod.metadata.name, namespace)
        assert output in log, f"pod {pod.metadata.name} logged {log!r}, not the command's output"


@pytest.mark.test_id("985aef18-bc96-4be0-8e59-164dd3177606")
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Controllers")
@pytest.mark.windows_form(forms.CMD_ECHO_TO_FILE)
def test_job_runs_to_its_completions_with_bounded_parallelism(
    kube, wincon, namespace, pinned, build, profile, data_plane, target_os
):
    """Job is among "the following workload controllers ... supported with Windows containers" (002_8a7e76f95009f44f.txt, Controllers): 4 completions, never more than 2 pods at once."""
    build = build if target_os == "windows" else None
    image = wincon.catalog.image("agnhost", target_os, build)
    (manifest,) = pinned("job", name="batch", completions=4, parallelism=2, image=image, target_os=target_os)
    kube.create(manifest)
    data_plane("wait for 4 completions of job batch; read each pod's exit code and log ('job done')")
    batch = kube.batch
    bounded = Invariant(
        job_complete,
        lambda job: f"{job.status.active} pods active at once" if job.status and (job.status.active or 0) > 2 else None,
    )
    job = wait_for(
        batch.list_namespaced_job,
        "batch",
        bounded,
        job_failure,
        wincon.pod_start_timeout,
        describe=f"job {namespace}/batch",
        namespace=namespace,
    )
    assert job.status.succeeded == 4, f"succeeded {job.status.succeeded}, failed {job.status.failed}"
    assert not bounded.violations, bounded.violations
    core = kube.core
    pods = call(core.list_namespaced_pod, namespace, label_selector="batch.kubernetes.io/job-name=batch").items
    succeeded = [p for p in pods if p.status.phase == "Succeeded"]
    assert len(succeeded) == 4, [(p.metadata.name, p.status.phase) for p in pods]
    assert_all_ran_on(succeeded, profile, target_os, build)
    ran_to_completion(kube, namespace, succeeded, "job done")


def cron_fired(cron) -> bool:
    """The CronJob controller has started a Job on the schedule (status.lastScheduleTime set)."""
    return bool(cron.status and cron.status.last_schedule_time)


@pytest.mark.test_id("90c460b0-2325-4ec1-a64c-1e02193b6e00")
@pytest.mark.slow
@pytest.mark.dataplane
@pytest.mark.documents("k8s-windows-guide", "Controllers")
@pytest.mark.windows_form(forms.CMD_ECHO_TO_FILE)
def test_cronjob_fires_on_schedule_and_its_job_completes(
    kube, wincon, namespace, pinned, build, profile, data_plane, target_os
):
    """CronJob is among "the following workload controllers ... supported with Windows containers" (002_8a7e76f95009f44f.txt, Controllers): a `*/1 * * * *` CronJob fires within a minute."""
    build = build if target_os == "windows" else None
    image = wincon.catalog.image("agnhost", target_os, build)
    (manifest,) = pinned("cronjob", name="every-minute", image=image, target_os=target_os)
    kube.create(manifest)
    data_plane("wait for the CronJob to fire and its Job to complete; read the pod's exit code and log ('cron fired')")
    batch = kube.batch
    # A behaviour wait: the CronJob firing on its schedule is the controller's own work, so none within the wait is
    # the behaviour not holding (a failure), not the cluster's error. Its Job's pod then starting and running to
    # completion is the node's: a setup wait, as long as a pod start.
    wait_for(
        batch.list_namespaced_cron_job,
        "every-minute",
        cron_fired,
        None,
        CRON_WAIT_SECONDS,
        describe=f"cronjob {namespace}/every-minute firing",
        behaviour=True,
        namespace=namespace,
    )
    cron = wait_for(
        batch.list_namespaced_cron_job,
        "every-minute",
        cronjob_succeeded,
        None,
        wincon.pod_start_timeout,
        describe=f"the Job cronjob {namespace}/every-minute started, complete",
        namespace=namespace,
    )
    fired = cron.status.last_schedule_time
    assert fired is not None and fired.second == 0, f"scheduled at {fired}, not on a minute boundary"
    assert cron.status.last_successful_time >= fired
    jobs = [
        j
        for j in call(batch.list_namespaced_job, namespace).items
        if any(o.kind == "CronJob" and o.name == "every-minute" for o in j.metadata.owner_references or [])
    ]
    assert any(job_complete(j) for j in jobs), [j.metadata.name for j in jobs]
    pods = [p for p in kube.pods({"app": "every-minute"}) if p.status.phase == "Succeeded"]
    assert pods, "no succeeded pod of the CronJob's Job"
    assert_all_ran_on(pods, profile, target_os, build)
    ran_to_completion(kube, namespace, pods, "cron fired")
