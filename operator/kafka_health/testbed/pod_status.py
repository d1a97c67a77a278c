"""The kubelet's words for the stand-in's pods: the status it writes, and the in-place restart
after an OOM kill.

A real kubelet restarts a container the OOM killer ended inside the same pod (restartPolicy
Always): the pod keeps its uid, `restartCount` grows by one and `lastState.terminated` says
`reason: OOMKilled, exitCode: 137` until the container ends again. The testbed's fault
`kafka-health testbed broker oom-kill N` SIGKILLs the broker and leaves a marker here
(`<state dir>/k8s/oom-killed/<N>`), so the stand-in restarts that broker in its pod and writes
exactly that; any other stop (`broker stop`, `kill`) leaves the pod reporting the broker down,
as before. The operator reads `lastState` to report an unclean stop
(kafka_health.diagnose.unclean_stops).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafka_health.testbed.node_process import process_start_time
from kafka_health.testbed.pod_layout import CONTAINER, now_rfc3339, rfc3339

SIGKILL_EXIT = 137
_WAITING = {
    "BrokerDown": "the testbed broker is not running; the stand-in does not restart it "
    "(`kafka-health testbed broker start N`, or delete the pod)",
    "Terminating": "stopping the broker (SIGTERM)",
    "ContainerCreating": "starting the broker",
}


def _marker(state_dir: Path, node_id: int) -> Path:
    return state_dir / "k8s" / "oom-killed" / str(node_id)


def mark_oom_killed(state_dir: Path, node_id: int) -> None:
    """Leave the marker the stand-in reads: node `node_id`'s next stop is an OOM kill."""
    path = _marker(state_dir, node_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(now_rfc3339())


def take_oom_killed(state_dir: Path, node_id: int) -> str | None:
    """The time node `node_id` was OOM-killed (marker removed), or None when it was not."""
    path = _marker(state_dir, node_id)
    try:
        when = path.read_text().strip()
    except FileNotFoundError:
        return None
    path.unlink(missing_ok=True)
    return when or now_rfc3339()


def container_status(pod: Any) -> Any | None:
    """The broker container's status in the pod (None before the first status is written)."""
    statuses = (pod.status.container_statuses if pod.status else None) or []
    return next((s for s in statuses if s.name == CONTAINER), None)


def restart_count(pod: Any) -> int:
    c = container_status(pod)
    return (c.restart_count or 0) if c is not None else 0


def _last_state(pod: Any) -> dict[str, Any] | None:
    """The container's lastState as the pod has it (kept across the kubelet's status rewrites)."""
    c = container_status(pod)
    t = c.last_state.terminated if c is not None and c.last_state is not None else None
    if t is None:
        return None
    stamp = {
        k: rfc3339(v)
        for k, v in (("startedAt", t.started_at), ("finishedAt", t.finished_at))
        if v is not None
    }
    return {"terminated": {"exitCode": t.exit_code, "reason": t.reason, **stamp}}


def oom_killed_state(finished_at: str, started_at: str | None) -> dict[str, Any]:
    """lastState after the OOM killer ended the container."""
    since = {"startedAt": started_at} if started_at else {}
    return {
        "terminated": {"exitCode": SIGKILL_EXIT, "reason": "OOMKilled", "finishedAt": finished_at, **since}
    }


def status_body(
    pod: Any,
    *,
    image: str,
    ready: bool,
    pid: int | None,
    waiting: str | None = None,
    last_state: dict[str, Any] | None = None,
    restarts: int | None = None,
) -> dict[str, Any]:
    """A kubelet-like status; condition transition times kept when the condition did not change,
    lastState and restartCount kept unless given (an in-place restart gives them)."""
    now = now_rfc3339()
    previous = {c.type: c for c in ((pod.status.conditions if pod.status else None) or [])}

    def condition(kind: str, value: bool) -> dict[str, Any]:
        status = "True" if value else "False"
        old = previous.get(kind)
        since = old.last_transition_time if old is not None and old.status == status else None
        return {
            "type": kind,
            "status": status,
            "lastTransitionTime": rfc3339(since) if since else now,
        }

    if pid is not None:
        state: dict[str, Any] = {"running": {"startedAt": process_start_time(pid) or now}}
    else:
        reason = waiting or "ContainerCreating"
        state = {"waiting": {"reason": reason, "message": _WAITING.get(reason, reason)}}
    start_time = pod.status.start_time if pod.status and pod.status.start_time else None
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": image,
        "imageID": "",
        "containerID": f"testbed://{pid}" if pid else None,
        "ready": ready,
        "started": pid is not None,
        "restartCount": restart_count(pod) if restarts is None else restarts,
        "state": state,
    }
    last = last_state if last_state is not None else _last_state(pod)
    if last is not None:
        container["lastState"] = last
    return {
        "phase": "Running",
        "hostIP": "127.0.0.1",
        "startTime": rfc3339(start_time) if start_time else now,
        "conditions": [
            condition("PodScheduled", True),
            condition("Initialized", True),
            condition("ContainersReady", ready),
            condition("Ready", ready),
        ],
        "containerStatuses": [container],
    }


def running_since(pod: Any) -> str | None:
    """When the container's current run started (state.running.startedAt), if it runs."""
    c = container_status(pod)
    running = c.state.running if c is not None and c.state is not None else None
    at = running.started_at if running is not None else None
    return rfc3339(at) if at is not None else None
