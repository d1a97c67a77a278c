"""A diagnosis as plain text for a terminal: a header, one line per finding, then the verdict."""

from __future__ import annotations

from collections import Counter

from kafka_health.models.findings import Diagnosis, Finding, Severity, SubjectKind

_VERDICT = {0: "healthy", 1: "warnings", 4: "critical"}


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


def render(diagnosis: Diagnosis) -> str:
    d = diagnosis
    lines = [f"Cluster {d.cluster}   snapshot {d.taken_at:%Y-%m-%d %H:%M:%S %Z}".rstrip()]
    if d.summary is not None:
        s = d.summary
        alive = sum(1 for b in s.brokers if b.alive)
        lines.append(
            f"{len(s.brokers)} brokers ({alive} alive), {s.topics} topics, {s.partitions} partitions, "
            f"{s.groups} consumer groups"
        )
    if d.missing:
        lines.append(f"Not read: {', '.join(d.missing)}")
    lines.append("")
    if not d.findings:
        lines.append("No findings.")
    else:
        sev_w = max(len("SEVERITY"), *(len(f.severity.value) for f in d.findings))
        chk_w = max(len("CHECK"), *(len(f.check) for f in d.findings))
        sub_w = min(40, max(len("SUBJECT"), *(len(subject_label(f)) for f in d.findings)))
        lines.append(f"{'SEVERITY':<{sev_w}}  {'CHECK':<{chk_w}}  {'SUBJECT':<{sub_w}}  MESSAGE")
        indent = " " * (sev_w + chk_w + 4)
        for f in d.findings:
            lines.append(
                f"{f.severity.value:<{sev_w}}  {f.check:<{chk_w}}  {subject_label(f):<{sub_w}}  {f.message}"
            )
            if f.remediation:
                lines.append(f"{indent}→ {f.remediation}")
    c = counts(d)
    took = f" in {d.duration_seconds:.1f} s" if d.duration_seconds is not None else ""
    lines.append("")
    lines.append(
        f"{c[Severity.CRITICAL]} critical, {c[Severity.WARNING]} warning, {c[Severity.INFO]} info{took}: "
        f"{_VERDICT[d.exit_code()]} (exit {d.exit_code()})"
    )
    return "\n".join(lines) + "\n"
