"""Kopf handlers: glue. They schedule a policy's cycles, move each off the event loop in one
hop (`asyncio.to_thread`, the loop's default executor) and apply what comes back (metrics,
Events); the cycle itself is `controller/cycle.run_cycle`.

One daemon per KafkaHealthPolicy runs its cycles every `spec.diagnostics.interval`, so a slow
or failing policy never blocks another; deleting a policy stops its daemon (Kopf holds a
finalizer until the daemon has exited).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

import kopf

from kafka_health.controller import credentials
from kafka_health.controller import runtime as rt_mod
from kafka_health.controller.act_context import OnEvent
from kafka_health.controller.cycle import CycleGate, PolicyWorker, interval_seconds, remediate_now, run_cycle
from kafka_health.controller.cycle_report import CycleReport
from kafka_health.models.policy import GROUP, PLURAL, VERSION
from kafka_health.report import events, metrics

log = logging.getLogger(__name__)

FINALIZER = f"{GROUP}/finalizer"
"""Held while a policy's daemon runs, so deleting the policy first stops its work."""
LEGACY_FINALIZER = "kopf.zalando.org/KopfFinalizerMarker"
"""Kopf's default name, which earlier versions of the operator set: removed from every policy
(once the new one is in place, or when the policy is being deleted), else such a policy could
never be deleted."""


@kopf.on.startup()
async def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.persistence.finalizer = FINALIZER
    # Progress and diff-base in annotations: status is ours alone (and structurally pruned).
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="kopf.kafkahealth.io")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix="kopf.kafkahealth.io", key="last-handled-configuration"
    )
    # Kopf's own per-handler Events are noise for users; ours say what changed in the cluster.
    settings.posting.level = logging.WARNING
    settings.watching.server_timeout = 300
    # Watching named namespaces needs no cluster-wide namespace/CRD scans (and so no
    # cluster-wide RBAC): Kopf finds the resource through API discovery instead.
    if not rt_mod.current().settings.clusterwide:
        settings.scanning.disabled = True


def _has_legacy_finalizer(body: kopf.Body, **_: Any) -> bool:
    return LEGACY_FINALIZER in (body.metadata.get("finalizers") or [])


@kopf.on.event(GROUP, VERSION, PLURAL, when=_has_legacy_finalizer)
async def drop_legacy_finalizer(body: kopf.Body, name: str, namespace: str | None, **_: Any) -> None:
    """Migrate a policy from Kopf's default finalizer to ours: drop the old one once ours holds
    the policy (Kopf adds it for the daemon), or at once when the policy is being deleted (its
    daemon is stopped by then, or never started)."""
    finalizers = list(body.metadata.get("finalizers") or [])
    if FINALIZER not in finalizers and not body.metadata.get("deletionTimestamp"):
        return  # wait for Kopf to add ours: the policy is never left without a finalizer
    assert namespace is not None
    k8s = rt_mod.current().k8s
    if await asyncio.to_thread(k8s.remove_policy_finalizer, namespace, name, LEGACY_FINALIZER, finalizers):
        log.info("%s/%s: removed the legacy finalizer %s", namespace, name, LEGACY_FINALIZER)


@kopf.daemon(GROUP, VERSION, PLURAL, cancellation_timeout=60.0)
async def policy_daemon(
    stopped: kopf.DaemonStopped, body: kopf.Body, name: str, namespace: str | None, **_: Any
) -> None:
    assert namespace is not None  # KafkaHealthPolicy is namespaced
    runtime = rt_mod.current()
    worker = PolicyWorker(runtime, namespace, name)
    requests = asyncio.ensure_future(watch_requests(worker, body, stopped))
    stopper = asyncio.ensure_future(stop_acting_when_stopped(worker, stopped))
    try:
        while not stopped:
            started = time.monotonic()
            await run_one_cycle(worker, body, stopped)
            await wait_for_next_cycle(worker, body, stopped, started)
    finally:
        requests.cancel()
        stopper.cancel()
        metrics.forget_policy(namespace, name)
        if not worker.busy:
            await asyncio.to_thread(release, worker)  # else the abandoned cycle releases it when done
        else:
            worker.stop_roll_soon()


async def wait_for_next_cycle(
    worker: PolicyWorker, body: kopf.Body, stopped: kopf.DaemonStopped, started: float
) -> None:
    """Until the next cycle is due, at least 1 s after the last began: the interval is read again
    every 2 s, so a roll that starts stretches the wait (rollingRestart.diagnosisInterval) and a
    roll that ends brings the next diagnosis back to spec.diagnostics.interval."""
    while not stopped:
        due = max(1.0, interval_seconds(body.spec, rolling=worker.rolling()))
        left = due - (time.monotonic() - started)
        if left <= 0:
            return
        await stopped.wait(min(left, 2.0))


def release(worker: PolicyWorker) -> None:
    """The policy's daemon stopped: close its clients and remove its TLS material (files written
    from its Secrets, controller/credentials.py), which must not outlive the policy's work."""
    worker.close()
    credentials.forget_policy(worker.runtime.settings.work_dir, worker.namespace, worker.name)


async def stop_acting_when_stopped(worker: PolicyWorker, stopped: kopf.DaemonStopped) -> None:
    """The moment Kopf stops the daemon (peering paused this replica, the policy is deleted, the
    operator shuts down), the policy's executors take no further step: the roll driver and an
    election or offset reset running inside a cycle stop before their next step (the step under
    way was persisted first; the cluster Lease is handed over or released)."""
    await stopped.wait()
    worker.stop_acting()


REQUEST_POLL_S = 1.0


def request_key(body: kopf.Body) -> str:
    """What a user changes to ask for an action: spec.remediation and the kafkahealth.io annotations."""
    annotations = {k: v for k, v in (body.metadata.annotations or {}).items() if k.startswith(f"{GROUP}/")}
    remediation = dict(body.spec).get("remediation", {})
    return json.dumps([remediation, annotations], sort_keys=True, default=str)


async def watch_requests(worker: PolicyWorker, body: kopf.Body, stopped: kopf.DaemonStopped) -> None:
    """Plan at once when the user asks for something (a new request id, an approval, a mode or
    pause change), instead of at the end of the next diagnosis cycle: Kopf keeps `body` current,
    so a changed key is seen within a second. Diagnosis keeps its own schedule."""
    seen = request_key(body)
    on_event = _poster(body)

    while not stopped:
        await stopped.wait(REQUEST_POLL_S)
        key = request_key(body)
        if key == seen or stopped:
            continue
        seen = key
        try:
            await asyncio.to_thread(remediate_now, worker, dict(body.spec), on_event)
        except Exception:
            log.exception("planning %s/%s after a spec change failed", worker.namespace, worker.name)


async def run_one_cycle(worker: PolicyWorker, body: kopf.Body, stopped: kopf.DaemonStopped) -> None:
    """One cycle off the event loop in one hop (`controller/cycle.run_cycle` in a thread), and
    what it reports applied here: metrics and Events."""
    on_event = _poster(body)
    gate = CycleGate()
    cycle = asyncio.ensure_future(
        asyncio.to_thread(
            run_cycle,
            worker,
            dict(body.spec),
            generation=body.meta.get("generation"),
            on_event=on_event,
            gate=gate,
        )
    )
    stopping = asyncio.ensure_future(stopped.wait())
    await asyncio.wait({cycle, stopping}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if (stopped or not cycle.done()) and not gate.stop():
        # Deleted (or shutting down) while the cycle still saw: don't hold the deletion up for a
        # slow cycle. The thread finishes on its own; its result is dropped and its connection
        # closed. A cycle already writing status and acting is awaited (its executors stop
        # before their next step).
        worker.busy = True
        releasing = asyncio.ensure_future(release_when_done(cycle, worker))
        _RELEASING.add(releasing)
        releasing.add_done_callback(_RELEASING.discard)
        return
    report = await cycle
    if report is not None:
        apply_report(body, worker.namespace, worker.name, report)


_RELEASING: set[asyncio.Future[None]] = set()  # held until done: the loop keeps only weak references


async def release_when_done(cycle: asyncio.Future[Any], worker: PolicyWorker) -> None:
    """Release an abandoned cycle's worker when its thread ends, off the event loop: closing its
    clients waits on the client process, which must never stall the loop (other policies'
    daemons and Kopf's own deletion handling run on it)."""
    await asyncio.wait({cycle})
    await asyncio.to_thread(release, worker)


def _poster(body: kopf.Body) -> OnEvent:
    """Posts Events about the policy (from any thread: Kopf queues them)."""

    def on_event(type_: str, reason: str, message: str) -> None:
        events.post(body, events.EventSpec(type_, reason, message))

    return on_event


def apply_report(body: Any, namespace: str, name: str, report: CycleReport) -> None:
    """The cycle's metric updates and Events, applied."""
    m = report.metrics
    metrics.CYCLE_SECONDS.labels(namespace, name, m.result).observe(m.duration_s)
    metrics.DEGRADED.labels(namespace, name).set(1 if m.degraded else 0)
    if m.diagnosed_at is not None:
        metrics.LAST_SUCCESS.labels(namespace, name).set(m.diagnosed_at)
    if m.healthy is not None:
        metrics.HEALTHY.labels(namespace, name).set(1 if m.healthy else 0)
    if m.findings is not None:
        metrics.remove_series([metrics.FINDINGS], namespace, name)
        for (check, severity), n in m.findings.items():
            metrics.FINDINGS.labels(namespace, name, check, severity).set(n)
    if m.certificates is not None:
        metrics.remove_series([metrics.CERTIFICATE_EXPIRY], namespace, name)
        for broker, not_after in m.certificates.items():
            metrics.CERTIFICATE_EXPIRY.labels(namespace, name, str(broker)).set(not_after)
    if m.reassignment is not None:
        gauges = {"remaining_bytes": metrics.REASSIGNMENT_REMAINING, "eta_seconds": metrics.REASSIGNMENT_ETA}
        metrics.remove_series(gauges.values(), namespace, name)
        for key, value in m.reassignment.items():
            gauges[key].labels(namespace, name).set(value)
    if m.lag_seconds is not None:
        metrics.remove_series([metrics.CONSUMER_LAG_SECONDS], namespace, name)
        for (group, topic, kind), seconds in m.lag_seconds.items():
            metrics.CONSUMER_LAG_SECONDS.labels(namespace, name, group, topic, kind).set(seconds)
    for event in report.events:
        events.post(body, event)
