"""`kafka-health restart`: the never-safe rule and honest halts, as the operator applies them.

- `--never-safe refuse|proceed` mirrors `spec.remediation.rollingRestart.neverSafePartitions:
  Refuse|Proceed` through the operator's own decision (`plan.restart_safety.never_safe_verdict`):
  partitions with RF <= min.insync.replicas on the brokers to restart refuse the roll by
  default (exit 1, nothing touched, the partitions named); `proceed` rolls and names them.
- A roll that halts with a broker in flight names it as "restart begun, not confirmed healthy"
  and prints how to finish without restarting it twice (`plan.restart_resume.halt_advice`):
  run again with `--restart-begun BROKER=POD_UID`, and that broker only gets its health check
  while its pod is not the one deleted (`plan.restart_resume.resume_step`).
"""

from __future__ import annotations

import re
from enum import StrEnum

import typer

from kafka_health.models.policy import RestartBegun, RollingRestartResult
from kafka_health.models.snapshot import ClusterSnapshot
from kafka_health.plan.restart_resume import halt_advice
from kafka_health.plan.restart_safety import NeverSafeVerdict, never_safe_verdict

REFUSED = 1
"""Exit code of a refused roll: the CLI's "halted, failed or refused" (2 is a usage error)."""


class NeverSafe(StrEnum):
    refuse = "refuse"
    proceed = "proceed"


NEVER_SAFE_HELP = (
    "Partitions with RF <= min.insync.replicas on the brokers to restart (unavailable to acks=all "
    "producers while their broker restarts): refuse the roll (exit 1, the default, as the operator's "
    "neverSafePartitions: Refuse) or proceed anyway, naming them."
)
RESTART_BEGUN_HELP = (
    "BROKER=POD_UID (comma-separated for the members of a halted batch), printed by a halted roll: that broker's restart began (its pod POD_UID was deleted) "
    "and was not confirmed healthy. While its pod is no longer POD_UID, the roll only checks its health "
    "(pod Ready, registered, 0 under-replicated partitions) instead of restarting it again."
)

_BEGUN = re.compile(r"^\s*(\d+)\s*=\s*([0-9A-Za-z-]+)\s*$")


def parse_begun(text: str | None) -> list[RestartBegun]:
    """`--restart-begun BROKER=POD_UID[,BROKER=POD_UID…]` (a halted batch names each member);
    ValueError naming the option and the form."""
    if not text:
        return []
    out: list[RestartBegun] = []
    for item in text.split(","):
        match = _BEGUN.match(item)
        if match is None:
            raise ValueError(
                f"--restart-begun {text!r}: use BROKER=POD_UID (comma-separated for several), e.g. 2=0f3c…, "
                "as a halted roll prints it"
            )
        out.append(RestartBegun(broker=int(match.group(1)), pod_uid=match.group(2)))
    if len({b.broker for b in out}) != len(out):
        raise ValueError(f"--restart-begun {text!r}: name each broker once")
    return out


def never_safe_gate(snapshot: ClusterSnapshot, brokers: list[int], choice: NeverSafe) -> NeverSafeVerdict:
    """The operator's never-safe decision for this roll; prints the refusal (the caller exits
    REFUSED) or, with `proceed`, what rolling anyway costs."""
    verdict = never_safe_verdict(snapshot, brokers, refuse=choice is NeverSafe.refuse)
    if verdict.refused:
        typer.secho(f"refused: {verdict.refusal('pass --never-safe proceed')}", fg=typer.colors.RED)
    elif verdict.partitions:
        typer.secho(
            f"--never-safe proceed: {verdict.proceeding('--never-safe proceed')}", fg=typer.colors.YELLOW
        )
    return verdict


def halt_lines(result: RollingRestartResult, planned: list[int]) -> str:
    """After a halted roll: what was restarted, the broker in flight named as "restart begun, not
    confirmed healthy", and the command line that finishes without restarting it twice."""
    begun = [result.restart_begun, *(result.batch_begun or [])] if result.restart_begun else []

    def again(ids: list[int]) -> str:
        listed = ",".join(f"{b.broker}={b.pod_uid}" for b in begun)
        extra = f" --restart-begun {listed}" if begun else ""
        return f"run kafka-health restart again with --brokers {','.join(map(str, ids))}{extra}"

    return halt_advice(planned, list(result.brokers_done or []), begun, new_request=again)
