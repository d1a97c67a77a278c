"""A diagnosis as plain text for a terminal: a header, one line per incident (its reach and what
the operator does about it; with `members`, its findings indented below it), then the verdict."""

from __future__ import annotations

from collections import Counter

from kafka_health.diagnose.incidents import incidents_of
from kafka_health.models.findings import Diagnosis, Finding, Incident, Severity, SubjectKind

_VERDICT = {0: "healthy", 1: "warnings", 4: "critical"}
SHOWN_PARTITIONS = 6


def subject_label(f: Finding) -> str:
    """How a person names the subject: `orders-3`, `broker 1`, `group billing on orders-3`."""
    s = f.subject
    if s.kind is SubjectKind.PARTITION:
        tp = f"{s.topic}-{s.partition}"
        return f"group {s.group} on {tp}" if s.group else tp
    if s.kind is SubjectKind.BROKER:
        return f"broker {s.broker}"
    if s.kind is SubjectKind.TOPIC:
        return f"topic {s.topic}"
    if s.kind is SubjectKind.GROUP:
        return f"group {s.group}"
    return "cluster"


def counts(diagnosis: Diagnosis) -> dict[Severity, int]:
    c = Counter(f.severity for f in diagnosis.findings)
    return {s: c.get(s, 0) for s in (Severity.CRITICAL, Severity.WARNING, Severity.INFO)}


def incident_counts(incidents: list[Incident]) -> dict[Severity, int]:
    c = Counter(i.severity for i in incidents)
    return {s: c.get(s, 0) for s in (Severity.CRITICAL, Severity.WARNING, Severity.INFO)}


def _listed(names: list[str], total: int, limit: int) -> str:
    shown = ", ".join(names[:limit])
    more = total - min(len(names), limit)
    return shown + (f" and {more} more" if more > 0 else "")


def _visible(d: Diagnosis) -> str:
    """The counts are what the principal sees: say so when that is not the whole cluster."""
    seen = next((f for f in d.findings if f.check == "visibility"), None)
    if seen is None:
        return ""
    hidden = int(seen.evidence.get("hidden_partitions") or 0)
    if hidden:
        return f" (what this principal sees; {hidden} more partitions on the brokers are hidden from it)"
    return " (what this principal sees; the totals cannot be checked)"


def render(diagnosis: Diagnosis, members: bool = False) -> str:
    """The report; `members` also lists each incident's findings, indented under it."""
    d = diagnosis
    incidents = incidents_of(d)
    lines = [f"Cluster {d.cluster}   snapshot {d.taken_at:%Y-%m-%d %H:%M:%S %Z}".rstrip()]
    if d.summary is not None:
        s = d.summary
        alive = sum(1 for b in s.brokers if b.alive)
        lines.append(
            f"{len(s.brokers)} brokers ({alive} alive), {s.topics} topics, {s.partitions} partitions, "
            f"{s.groups} consumer groups" + _visible(d)
        )
    if d.missing:
        lines.append(f"Not read: {', '.join(d.missing)}")
    lines.append("")
    if not incidents:
        lines.append("No findings.")
    else:
        sev_w = max(len("SEVERITY"), *(len(i.severity.value) for i in incidents))
        id_w = max(len("INCIDENT"), *(len(i.id) for i in incidents))
        n_w = len("FINDINGS")
        lines.append(f"{'SEVERITY':<{sev_w}}  {'INCIDENT':<{id_w}}  {'FINDINGS':>{n_w}}  SUMMARY")
        indent = " " * (sev_w + id_w + n_w + 6)
        for inc in incidents:
            lines.append(
                f"{inc.severity.value:<{sev_w}}  {inc.id:<{id_w}}  {len(inc.findings):>{n_w}}  {inc.title}"
            )
            if inc.partitions_total:
                names = [str(p) for p in inc.partitions]
                lines.append(
                    f"{indent}partitions ({inc.partitions_total}): "
                    f"{_listed(names, inc.partitions_total, SHOWN_PARTITIONS)}"
                )
            if inc.groups_total:
                lines.append(
                    f"{indent}groups ({inc.groups_total}): {_listed(inc.groups, inc.groups_total, SHOWN_PARTITIONS)}"
                )
            lines.append(f"{indent}→ {inc.remediation}")
            if members:
                mc_w = max(len(f.check) for f in inc.findings)
                for f in inc.findings:
                    lines.append(
                        f"{indent}  {f.severity.value:<{sev_w}}  {f.check:<{mc_w}}  {subject_label(f)}: {f.message}"
                    )
    c = incident_counts(incidents)
    took = f" in {d.duration_seconds:.1f} s" if d.duration_seconds is not None else ""
    lines.append("")
    if incidents and not members:
        lines.append(f"The {len(d.findings)} findings behind them: --members (or -o json, -o html).")
    n = len(incidents)
    lines.append(
        f"{n} incident{'' if n == 1 else 's'} ({c[Severity.CRITICAL]} critical, {c[Severity.WARNING]} warning, "
        f"{c[Severity.INFO]} info) from {len(d.findings)} findings{took}: "
        f"{_VERDICT[d.exit_code()]} (exit {d.exit_code()})"
    )
    return "\n".join(lines) + "\n"
