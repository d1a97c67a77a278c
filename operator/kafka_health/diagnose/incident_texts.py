"""What an incident says: its title, extra evidence, remediation text and automatic action.

One describer per incident kind (`DESCRIBERS`), each a pure function of the incident's root, its
member findings (worst first) and its reach. The texts are what status, Events, the CLI and the
HTML report show; tests compare them word for word.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kafka_health.diagnose.incident_roots import broker_ids, is_cap_notice
from kafka_health.models.findings import Finding, IncidentKind, PartitionRef, SubjectKind

# The planner's remediation ids (kafka_health_spark.findings; repeated here to keep this module
# free of Spark): a finding's `remediation` is one of these or a hint for a person.
PREFERRED_LEADER_ELECTION = "preferred_leader_election"
ROLLING_RESTART = "rolling_restart"
OFFSET_RESET = "offset_reset"

Evidence = dict[str, float | int | str | None]
Description = tuple[str, Evidence, str, str | None]
"""Title, extra evidence, remediation text and the automatic action id (None: none)."""
NO_ACTION = "No automatic action"
MAX_HINTS = 3


@dataclass
class Reach:
    """The partitions and groups an incident affects."""

    partitions: list[PartitionRef]
    groups: list[str]
    evidence: dict[str, float | int | str | None] = field(default_factory=dict)
    total: int | None = None
    """How many partitions in all, when `partitions` lists only the first MAX_INCIDENT_PARTITIONS."""

    @property
    def n_partitions(self) -> int:
        return self.total if self.total is not None else len(self.partitions)


def count(members: list[Finding], check: str) -> int:
    """Findings of `check` among the members, counting the ones a cap notice left out."""
    listed = sum(1 for f in members if f.check == check and not is_cap_notice(f))
    for f in members:
        if f.check == check and is_cap_notice(f):
            return int(f.evidence.get("total") or listed)
    return listed


def _hints(members: list[Finding]) -> list[str]:
    """The members' own remediation hints (not the planner's ids), distinct, in order."""
    out: list[str] = []
    for f in members:
        r = f.remediation
        if r and r not in (PREFERRED_LEADER_ELECTION, ROLLING_RESTART, OFFSET_RESET) and r not in out:
            out.append(r)
    return out


def hint(members: list[Finding]) -> str:
    """ " To fix: <the members' hints>." (empty when they give none)."""
    hints = _hints(members)
    if not hints:
        return ""
    more = f" (and {len(hints) - MAX_HINTS} more in its findings)" if len(hints) > MAX_HINTS else ""
    return f" To fix: {'; '.join(h.rstrip('.') for h in hints[:MAX_HINTS])}{more}."


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def offline_recovery(members: list[Finding]) -> str:
    """How the offline partitions among the members come back (KIP-966), from their evidence:
    cleanly when an eligible leader replica or an ISR member returns, else only by an unclean
    election. "" when there is no unclean-only partition (nothing to add to "N offline")."""
    offline = [f for f in members if f.check == "offline_partition" and not is_cap_notice(f)]
    unclean = [
        f
        for f in offline
        if not broker_ids(f.evidence.get("eligible_leaders")) and not broker_ids(f.evidence.get("isr"))
    ]
    if not unclean:
        return ""
    clean = len(offline) - len(unclean)
    return (
        f"{clean} of the listed come back cleanly when an eligible or in-sync replica returns, "
        f"{len(unclean)} only by an unclean election (data loss)"
    )


def _broker_down_reach_text(members: list[Finding], reach: Reach) -> tuple[list[str], int, int]:
    """The reach in words, and the counts of partitions under and at min ISR."""
    reach_text = [plural(reach.n_partitions, "partition") + " affected"]
    if reach.evidence:
        reach_text = [
            f"{reach.evidence['under_replicated']} under-replicated",
            f"{reach.evidence['offline']} offline",
        ]
    how = offline_recovery(members)
    if how and reach.evidence:
        reach_text[-1] += f" ({how})"
    elif how:
        reach_text.append(how)
    at_min = count(members, "at_min_isr")
    under_min = count(members, "under_min_isr")
    if under_min:
        reach_text.append(f"{under_min} under min ISR")
    if at_min:
        reach_text.append(f"{at_min} at min ISR")
    return reach_text, under_min, at_min


def _broker_down(root: str, members: list[Finding], reach: Reach) -> Description:
    missing = next((f for f in members if f.check == "broker_missing"), members[0])
    fenced = missing.evidence.get("fenced") in (1, True, "1")
    state = "fenced (registered, not serving)" if fenced else "not registered in the cluster"
    reach_text, under_min, at_min = _broker_down_reach_text(members, reach)
    n_groups = len(reach.groups)
    title = f"Broker {root} is {state}"
    if reach.n_partitions or reach.evidence:
        title += ": " + ", ".join(reach_text)
    title += f"; {plural(n_groups, 'consumer group')} read from them." if n_groups else "."
    return (
        title,
        {"fenced": 1 if fenced else 0, "under_min_isr": under_min, "at_min_isr": at_min},
        f"{NO_ACTION}: the operator does not start brokers, and restarts no other broker while "
        f"partitions are under-replicated. Start broker {root} (check its process or pod, and its "
        "log); once it is back in every ISR, a preferred leader election returns its leaderships.",
        None,
    )


def _quorum(root: str, members: list[Finding], reach: Reach) -> Description:
    no_leader = any(f.check == "quorum_no_leader" for f in members)
    voters = sorted(
        {
            f.subject.broker
            for f in members
            if f.check == "quorum_voter_lagging" and f.subject.broker is not None
        }
    )
    if no_leader:
        title = "The KRaft controller quorum has no leader: no metadata change can happen."
    elif voters:
        title = f"Controller voter(s) {', '.join(map(str, voters))} trail the quorum leader."
    else:
        title = members[0].message
    return (
        title,
        {"lagging_voters": ",".join(map(str, voters)) or None},
        f"{NO_ACTION}: remediation is withheld while the quorum has no leader, and a rolling "
        "restart never takes a voter the quorum needs." + hint(members),
        None,
    )


def _disk(root: str, members: list[Finding], reach: Reach) -> Description:
    worst = members[0]
    return (
        f"Broker {root}'s disk: " + worst.message.removeprefix(f"Broker {root}'s "),
        {},
        f"{NO_ACTION}: the operator changes neither retention nor storage." + hint(members),
        None,
    )


def _ids(members: list[Finding], key: str) -> str:
    return ",".join(map(str, sorted({b for f in members for b in broker_ids(f.evidence.get(key))}))) or "none"


def _number(value: object) -> int | None:
    try:
        return int(float(str(value))) if value is not None else None
    except ValueError:
        return None


def _reassignment_progress(moving: list[Finding]) -> tuple[str, Evidence]:
    """ "; 50 MB left to copy, ETA 500 s" from the members' progress evidence, and its figures
    (no ETA unless every partition still copying has one)."""
    copying = [
        (_number(f.evidence.get("left_bytes")), _number(f.evidence.get("eta_seconds"))) for f in moving
    ]
    lefts = [n for n, _ in copying if n is not None]
    etas = [eta for n, eta in copying if n]  # of the partitions still copying
    rates = [n for f in moving if (n := _number(f.evidence.get("follower_throttle_rate"))) is not None]
    left = sum(lefts) if lefts else None
    eta = max(e for e in etas if e is not None) if etas and None not in etas else None
    rate = min(rates) if rates else None
    words = []
    if left is not None:
        words.append(f"{left} B left to copy")
    if eta is not None:
        words.append(f"ETA {eta} s")
    if rate is not None:
        words.append(f"throttled at {rate} B/s")
    text = f"; {', '.join(words)}" if words else ""
    return text, {"left_bytes": left, "eta_seconds": eta, "follower_throttle_rate": rate}


def _reassignment(root: str, members: list[Finding], reach: Reach) -> Description:
    moving = [f for f in members if f.check == "partition_reassigning"]
    in_sync = sum(int(str(f.evidence.get("added_in_sync") or 0)) for f in moving)
    new = sum(len(broker_ids(f.evidence.get("adding"))) for f in moving)
    throttled = sum(1 for f in moving if f.evidence.get("throttled") == "yes")
    stalled = sum(1 for f in moving if f.evidence.get("stalled") == "yes")
    adding, removing = _ids(moving, "adding"), _ids(moving, "removing")
    progress, figures = _reassignment_progress(moving)
    title = (
        f"{plural(len(moving), 'partition')} being reassigned: adding broker(s) {adding}, removing "
        f"broker(s) {removing}; {in_sync} of {new} new replicas in sync"
        + (f"; {throttled} throttled" if throttled else "")
        + (f"; {stalled} making no progress" if stalled else "")
        + progress
        + "."
    )
    evidence: Evidence = {
        "reassigning_partitions": len(moving),
        "adding": adding,
        "removing": removing,
        "new_replicas_in_sync": in_sync,
        "new_replicas": new,
        "throttled_partitions": throttled,
        "stalled_partitions": stalled,
        **figures,
    }
    return (
        title,
        evidence,
        f"{NO_ACTION}: a reassignment's new replicas are out of sync until they have caught up "
        "(under-replicated on purpose). Follow it with kafka-reassign-partitions --verify and its "
        "plan: it reports each partition and removes the throttles once the reassignment is complete.",
        None,
    )


def _causes_of(root: str, members: list[Finding]) -> dict[str, int]:
    """How many of the members' partitions broker `root` is out of sync on, per cause (from
    their `causes` evidence: "2 catching_up (…); 3 stuck")."""
    counts: dict[str, int] = {}
    for f in members:
        for detail in str(f.evidence.get("causes") or "").split("; "):
            broker, _, rest = detail.partition(" ")
            if broker == root and rest:
                cause = rest.split(" ", 1)[0]
                counts[cause] = counts.get(cause, 0) + 1
    return counts


def _out_of_sync_advice(root: str, causes: dict[str, int]) -> str:
    if "stuck" in causes:
        return (
            f"Broker {root} is not catching up on {plural(causes['stuck'], 'partition')}: check its replica "
            "fetcher (ReplicaFetcherThread errors in its log), its disk, network and GC pauses"
        )
    if "throttled" in causes:
        return f"A replication throttle holds broker {root}'s replicas: see replication_throttle_left"
    if causes and set(causes) == {"catching_up"}:
        return f"Broker {root} is catching up: nothing to fix while its lag shrinks"
    return f"Check broker {root}: its disk, network and GC pauses"


def _broker_out_of_sync(root: str, members: list[Finding], reach: Reach) -> Description:
    churn = next((f for f in members if f.check == "isr_churn"), None)
    out = len({(p.topic, p.partition) for p in reach.partitions})
    causes = _causes_of(root, [f for f in members if f.check != "isr_churn"])
    parts = []
    if out:
        why = ", ".join(f"{c.replace('_', ' ')}: {n}" for c, n in sorted(causes.items()))
        parts.append(f"out of sync on {plural(out, 'partition')}" + (f" ({why})" if why else ""))
    if churn is not None:
        parts.append(f"dropped out of ISRs {churn.evidence.get('episodes')} times in the window")
    title = f"Broker {root} is alive but " + " and ".join(parts or ["out of sync"]) + "."
    evidence: Evidence = {f"{c}_partitions": n for c, n in sorted(causes.items())}
    return (
        title,
        evidence,
        f"{NO_ACTION}: a rolling restart waits until every partition is back in sync. "
        + _out_of_sync_advice(root, causes)
        + (
            "; a rolling restart of it can be requested (spec.remediation.rollingRestart)."
            if churn is not None
            else "."
        ),
        None,
    )


def _never_safe_topic(root: str, members: list[Finding], reach: Reach) -> Description:
    topic_finding = next(
        (f for f in members if f.check in ("min_isr_too_high", "low_replication_factor")), members[0]
    )
    rf = topic_finding.evidence.get("replication_factor")
    min_isr = topic_finding.evidence.get("min_insync_replicas")
    n = topic_finding.evidence.get("partitions")
    return (
        f"Topic {root} can never be safe: replication factor {rf}, min.insync.replicas {min_isr}"
        + (f" ({plural(int(n), 'partition')})." if isinstance(n, int | float) else "."),
        {"replication_factor": rf, "min_insync_replicas": min_isr},
        f"{NO_ACTION}: topic configuration is its owner's. Rolling restarts refuse while it exists "
        "(spec.remediation.rollingRestart.neverSafePartitions: Proceed rolls anyway and names its "
        "partitions)." + hint(members),
        None,
    )


def _topic_durability(root: str, members: list[Finding], reach: Reach) -> Description:
    checks = sorted({f.check for f in members})
    return (
        f"Topic {root}'s durability settings are weaker than the policy asks: {', '.join(checks)}.",
        {},
        f"{NO_ACTION}: topic configuration is its owner's." + hint(members),
        None,
    )


def _consumer_group(root: str, members: list[Finding], reach: Reach) -> Description:
    summary = next(
        (f for f in members if f.check == "consumer_lag" and f.subject.kind is SubjectKind.GROUP), members[0]
    )
    others = sorted({f.check for f in members if f.check != "consumer_lag"})
    title = summary.message + (
        f" Also: {', '.join(others)}." if others and summary.check == "consumer_lag" else ""
    )
    resettable = any(f.remediation == OFFSET_RESET for f in members)
    text = (
        "An offset reset runs only on request (spec.remediation.offsetResets, with the group "
        "stopped), never automatically."
        if resettable
        else f"{NO_ACTION}: the operator does not touch consumers."
    )
    return title, {"status": summary.evidence.get("status")}, text + hint(members), None


def _leadership(root: str, members: list[Finding], reach: Reach) -> Description:
    electable = any(f.remediation == PREFERRED_LEADER_ELECTION for f in members)
    brokers = sorted(
        {f.subject.broker for f in members if f.check == "leader_imbalance" and f.subject.broker is not None}
    )
    parts = []
    if brokers:
        parts.append(f"broker(s) {', '.join(map(str, brokers))} lead less than their preferred partitions")
    if any(f.check == "leader_skew" for f in members):
        parts.append("leader counts are skewed across brokers")
    title = "Leadership is off balance: " + "; ".join(parts) + "."
    if electable:
        return (
            title,
            {},
            "Preferred leader election: automatic in Enforce mode when the live imbalance is over "
            "spec.remediation.preferredLeaderElection's threshold (in a maintenance window when one "
            "is required), or on request with the kafkahealth.io/elect-leaders annotation.",
            PREFERRED_LEADER_ELECTION,
        )
    return title, {}, f"{NO_ACTION}." + hint(members), None


def _days_left(f: Finding) -> float:
    return float(str(f.evidence.get("days_left") or 0))


def _certificates(root: str, members: list[Finding], reach: Reach) -> Description:
    expiring = sorted((f for f in members if f.check == "listener_certificate_expiry"), key=_days_left)
    parts = []
    if expiring:
        each = [
            f"broker {f.subject.broker} "
            + (
                f"ended {f.evidence.get('not_after')}"
                if _days_left(f) <= 0
                else f"in {_days_left(f):.1f} days"
            )
            for f in expiring[:MAX_HINTS]
        ]
        more = f" and {len(expiring) - MAX_HINTS} more" if len(expiring) > MAX_HINTS else ""
        parts.append("served certificates ending: " + ", ".join(each) + more)
    mismatch = next((f for f in members if f.check == "listener_certificate_mismatch"), None)
    if mismatch is not None:
        parts.append(f"served from {mismatch.evidence.get('issuers')} issuers")
    unread = count(members, "snapshot_incomplete")
    if unread:
        parts.append(f"the certificates of {plural(unread, 'broker')} not read")
    return (
        "Listener certificates: " + "; ".join(parts) + ".",
        {"expiring_brokers": len(expiring)},
        f"{NO_ACTION}: the operator issues no certificates." + hint(members),
        None,
    )


def _visibility(root: str, members: list[Finding], reach: Reach) -> Description:
    first = members[0]
    return (
        first.message,
        {k: first.evidence.get(k) for k in ("hidden_partitions", "visible_partitions")},
        f"{NO_ACTION}: grant the ACL named; until then the diagnosis covers only what the principal "
        "sees, and the operator runs no remediation (KafkaAuthorizationDenied)."
        if first.message.lower().startswith("authorization denied")
        else f"{NO_ACTION}: the brokers' log dirs are read again next cycle.",
        None,
    )


def _cluster_unreachable(root: str, members: list[Finding], reach: Reach) -> Description:
    return (
        members[0].message,
        {},
        f"{NO_ACTION}: nothing is planned on a cluster that cannot be read." + hint(members),
        None,
    )


def _check(root: str, members: list[Finding], reach: Reach) -> Description:
    """One incident per check: anything no other kind claims."""
    first = members[0]
    title = first.message if len(members) == 1 else f"{root}: {len(members)} findings; worst: {first.message}"
    return title, {}, f"{NO_ACTION}." + (hint(members) or " See its findings."), None


DESCRIBERS: dict[IncidentKind, Callable[[str, list[Finding], Reach], Description]] = {
    IncidentKind.BROKER_DOWN: _broker_down,
    IncidentKind.QUORUM: _quorum,
    IncidentKind.DISK: _disk,
    IncidentKind.REASSIGNMENT: _reassignment,
    IncidentKind.BROKER_OUT_OF_SYNC: _broker_out_of_sync,
    IncidentKind.NEVER_SAFE_TOPIC: _never_safe_topic,
    IncidentKind.TOPIC_DURABILITY: _topic_durability,
    IncidentKind.CONSUMER_GROUP: _consumer_group,
    IncidentKind.LEADERSHIP: _leadership,
    IncidentKind.CERTIFICATES: _certificates,
    IncidentKind.VISIBILITY: _visibility,
    IncidentKind.CLUSTER_UNREACHABLE: _cluster_unreachable,
}
"""The describer of each kind; a kind not listed (CHECK) is described per check. PLANNED_RESTART
is described by kafka_health.diagnose.planned."""


def describe(kind: IncidentKind, root: str, members: list[Finding], reach: Reach) -> Description:
    """Title, extra evidence, remediation text and the automatic action id of an incident."""
    return DESCRIBERS.get(kind, _check)(root, members, reach)
