"""Kopf handlers: thin wiring. Every decision lives in collect/diagnose/plan/report modules.

One daemon per KafkaHealthPolicy runs its cycles every `spec.diagnostics.interval`; Kafka and
Spark work runs in threads, so a slow or failing policy never blocks another; deleting a
policy stops its daemon (Kopf holds a finalizer until the daemon has exited).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import kopf

from kafka_health.controller import credentials
from kafka_health.controller import runtime as rt_mod
from kafka_health.controller.cycle import PolicyWorker
from kafka_health.k8s.client import K8sError
from kafka_health.models.policy import GROUP, PLURAL, VERSION, parse_duration
from kafka_health.models.reasons import EventReason
from kafka_health.report import events, metrics
from kafka_health.report.freshness import Freshness, slow_cycle_event

log = logging.getLogger(__name__)

DEFAULT_INTERVAL_S = 60.0

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
    settings.execution.max_workers = 16
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


def _interval_seconds(spec: dict[str, Any]) -> float:
    try:
        return parse_duration(str(spec.get("diagnostics", {}).get("interval", "60s"))).total_seconds()
    except Exception:
        return DEFAULT_INTERVAL_S


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
            elapsed = time.monotonic() - started
            await stopped.wait(max(1.0, _interval_seconds(dict(body.spec)) - elapsed))
    finally:
        requests.cancel()
        stopper.cancel()
        metrics.forget_policy(namespace, name)
        if not worker.busy:
            await asyncio.to_thread(release, worker)  # else the abandoned cycle releases it when done
        else:
            worker.stop_roll_soon()


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

    def on_event(type_: str, reason: str, message: str) -> None:
        events.post(body, events.EventSpec(type_, reason, message))

    while not stopped:
        await stopped.wait(REQUEST_POLL_S)
        key = request_key(body)
        if key == seen or stopped:
            continue
        seen = key
        try:
            await asyncio.to_thread(worker.remediate_now, dict(body.spec), on_event)
        except Exception:
            log.exception("planning %s/%s after a spec change failed", worker.namespace, worker.name)


async def run_one_cycle(worker: PolicyWorker, body: kopf.Body, stopped: kopf.DaemonStopped) -> None:
    """collect → diagnose in a thread, then report: status, Events, metrics."""
    ns, name = worker.namespace, worker.name
    started = time.monotonic()
    cycle = asyncio.ensure_future(asyncio.to_thread(worker.run, dict(body.spec)))
    stopping = asyncio.ensure_future(stopped.wait())
    await asyncio.wait({cycle, stopping}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if stopped or not cycle.done():
        # Deleted (or shutting down) mid-cycle: don't hold the deletion up for a slow cycle.
        # The thread finishes on its own; its result is dropped and its connection closed.
        worker.busy = True
        cycle.add_done_callback(lambda _: release(worker))
        return
    outcome = cycle.result()
    duration = time.monotonic() - started

    def on_event(type_: str, reason: str, message: str) -> None:
        events.post(body, events.EventSpec(type_, reason, message))

    top_n = int(body.spec.get("diagnostics", {}).get("topFindings", 10))
    try:
        outcome = await asyncio.to_thread(  # as reported: a roll's planned restarts applied
            worker.finish_cycle,
            dict(body.spec),
            outcome,
            generation=body.meta.get("generation"),
            top_n=top_n,
            on_event=on_event,
        )
    except K8sError as exc:
        log.warning("cannot read %s/%s: %s", ns, name, exc)
        return
    _report(worker, body, outcome, duration)


def _report(worker: PolicyWorker, body: kopf.Body, outcome: Any, duration: float) -> None:
    ns, name = worker.namespace, worker.name
    diagnosis = outcome.diagnosis
    result = "ok" if diagnosis is not None and outcome.problem is None else "problem"
    metrics.CYCLE_SECONDS.labels(ns, name, result).observe(duration)
    if outcome.problem is not None:
        log.info("cycle %s/%s: %s in %.1fs", ns, name, outcome.problem.reason, duration)
    elif diagnosis is not None:
        log.info(
            "cycle %s/%s: %d incidents, %d findings in %.1fs",
            ns,
            name,
            len(diagnosis.incidents),
            len(diagnosis.findings),
            duration,
        )
    metrics.DEGRADED.labels(ns, name).set(1 if outcome.problem or outcome.remediation_blockers else 0)
    if outcome.problem is not None:
        if worker.finding_keys is None or "problem:" + outcome.problem.reason not in worker.finding_keys:
            events.post(body, events.EventSpec("Warning", outcome.problem.reason, outcome.problem.message))
        worker.finding_keys = {"problem:" + outcome.problem.reason}
        return
    if diagnosis is None:
        return
    metrics.LAST_SUCCESS.labels(ns, name).set(time.time())
    metrics.HEALTHY.labels(ns, name).set(1 if diagnosis.exit_code() == 0 else 0)
    metrics.remove_series([metrics.FINDINGS], ns, name)
    counts: dict[tuple[str, str], int] = {}
    for f in diagnosis.findings:
        counts[(f.check, f.severity.value)] = counts.get((f.check, f.severity.value), 0) + 1
    for (check, severity), n in counts.items():
        metrics.FINDINGS.labels(ns, name, check, severity).set(n)
    previous = {k for k in (worker.finding_keys or set()) if not k.startswith("problem:")}
    recovered = worker.finding_keys is not None and any(k.startswith("problem:") for k in worker.finding_keys)
    interval = timedelta(seconds=_interval_seconds(dict(body.spec)))
    fresh = Freshness(diagnosis.taken_at, datetime.now(UTC), interval)
    # worker.finding_keys holds the ids of the incidents posted (and "problem:<reason>").
    to_post, worker.finding_keys = events.incident_events(
        previous if worker.finding_keys is not None else None, diagnosis, late=fresh.late
    )
    if recovered:
        to_post.insert(
            0,
            events.EventSpec("Normal", EventReason.RECOVERED, "The cluster is readable and diagnosed again."),
        )
    # News from a snapshot older than one interval says so (report/freshness.py).
    to_post = [replace(event, message=fresh.news(event.message)) for event in to_post]
    reported = worker.last_reported
    if reported is not None and reported.slow is not None and reported.duration_seconds is not None:
        slow_event = slow_cycle_event(
            worker.slow, timedelta(seconds=reported.duration_seconds), interval, diagnosis.taken_at
        )
        worker.slow = reported.slow
        if slow_event is not None:
            to_post.insert(0, slow_event)
    for event in to_post:
        events.post(body, event)
