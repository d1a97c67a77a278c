"""A diagnosis as one self-contained HTML file: incidents (each expands to its findings) plus
plots, no external resources.

Figures are built with matplotlib's object API (no pyplot state), so rendering is safe from the
operator's worker threads. The plots (leaders and partitions per broker, lag over time, disk per broker) come from the
diagnosis summary and are embedded as PNG data URIs, so the file can be mailed or attached to
a ticket as it is.
"""

from __future__ import annotations

import base64
import io
from collections import defaultdict
from importlib import resources

import jinja2
from matplotlib import dates as mdates
from matplotlib.figure import Figure

from kafka_health.diagnose.incidents import incidents_of
from kafka_health.models.findings import BrokerSummary, Diagnosis, DiagnosisSummary, SeriesPoint
from kafka_health.report.table import counts, incident_counts, subject_label

_UNITS = [("GiB", 1024.0**3), ("MiB", 1024.0**2), ("KiB", 1024.0), ("bytes", 1.0)]


def _png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _by_key(points: list[SeriesPoint]) -> dict[str, list[SeriesPoint]]:
    out: dict[str, list[SeriesPoint]] = defaultdict(list)
    for p in points:
        out[p.key].append(p)
    return dict(sorted(out.items()))


def plot_brokers(summary: DiagnosisSummary) -> str | None:
    """Partitions hosted, leaders and preferred leaders per broker (grouped bars)."""
    if not summary.brokers:
        return None
    ids = [b.broker for b in summary.brokers]
    x = range(len(ids))
    fig = Figure(figsize=(7, 3.2))
    ax = fig.subplots()
    w = 0.28
    ax.bar([i - w for i in x], [b.partitions for b in summary.brokers], w, label="replicas hosted")
    ax.bar(list(x), [b.leaders for b in summary.brokers], w, label="leaders")
    ax.bar([i + w for i in x], [b.preferred_leaders for b in summary.brokers], w, label="preferred leader of")
    ax.set_xticks(
        list(x),
        [
            f"{b}{'' if alive else ' (down)'}"
            for b, alive in zip(ids, [b.alive for b in summary.brokers], strict=True)
        ],
    )
    ax.set_xlabel("broker")
    ax.set_ylabel("partitions")
    ax.legend(fontsize=8)
    ax.set_title("Leaders and partitions per broker")
    return _png(fig)


def plot_lag(summary: DiagnosisSummary) -> str | None:
    """Total lag per group over the window (the groups with the most lag)."""
    series = _by_key(summary.lag)
    if not series:
        return None
    fig = Figure(figsize=(7, 3.2))
    ax = fig.subplots()
    for group, points in series.items():
        ax.plot(
            mdates.date2num([p.ts for p in points]),
            [p.value for p in points],
            "o-",
            markersize=3,
            label=group,
        )
    ax.xaxis_date(tz="UTC")
    ax.set_ylabel("messages behind")
    ax.set_title("Consumer lag over time")
    ax.legend(fontsize=8)
    fig.autofmt_xdate()
    return _png(fig)


def _percent_full(b: BrokerSummary) -> float:
    """How full the broker's volumes are (free space counts; Kafka's share when it is unknown)."""
    if not b.total_bytes:
        return 0.0
    if b.usable_bytes is not None:
        return (b.total_bytes - b.usable_bytes) * 100 / b.total_bytes
    return (b.used_bytes or 0) * 100 / b.total_bytes


def plot_disk(summary: DiagnosisSummary) -> str | None:
    """Disk per broker: used share of the volume now (bars) and used bytes over time (lines)."""
    known = [b for b in summary.brokers if b.used_bytes is not None]
    series = _by_key(summary.disk_used_bytes)
    if not known and not series:
        return None
    fig = Figure(figsize=(9, 3.2))
    left, right = fig.subplots(1, 2)
    pct = [_percent_full(b) for b in known]
    left.bar(
        [str(b.broker) for b in known],
        pct,
        color=["#c0392b" if p >= 90 else "#e67e22" if p >= 80 else "#2e86c1" for p in pct],
    )
    left.axhline(80, color="#e67e22", linewidth=0.8, linestyle="--")
    left.axhline(90, color="#c0392b", linewidth=0.8, linestyle="--")
    left.set_ylim(0, 100)
    left.set_xlabel("broker")
    left.set_ylabel("% of volume used")
    left.set_title("Log-dir volumes now")
    top = max((p.value for p in summary.disk_used_bytes), default=0.0)
    unit, scale = next(((u, s) for u, s in _UNITS if top >= s), _UNITS[-1])
    for broker, points in series.items():
        right.plot(
            mdates.date2num([p.ts for p in points]),
            [p.value / scale for p in points],
            label=f"broker {broker}",
        )
    right.xaxis_date(tz="UTC")
    right.set_ylim(bottom=0)
    right.set_ylabel(f"{unit} of Kafka logs")
    right.set_title("Kafka's log bytes over time")
    if series:
        right.legend(fontsize=8)
    fig.autofmt_xdate()
    return _png(fig)


def render(diagnosis: Diagnosis) -> str:
    template = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined).from_string(
        resources.files("kafka_health.report").joinpath("diagnosis.html.j2").read_text()
    )
    s = diagnosis.summary
    incidents = incidents_of(diagnosis)
    plots = [p for p in ((plot_brokers(s), plot_lag(s), plot_disk(s)) if s else ()) if p]
    return template.render(
        d=diagnosis,
        counts={k.value: v for k, v in counts(diagnosis).items()},
        incident_counts={k.value: v for k, v in incident_counts(incidents).items()},
        incidents=[(i, [(f, subject_label(f)) for f in i.findings]) for i in incidents],
        verdict={0: "healthy", 1: "warnings", 4: "critical"}[diagnosis.exit_code()],
        plots=plots,
    )
