"""`kafka-health elect-leaders` (its command in `elect_cli`) and `kafka-health reset-offsets`: the
operator's remediations, standalone, and what they share (options, errors, tables).

Same planner and executors as the operator (`plan_preferred_election` + `execute_election`;
`plan_offset_reset` + `apply_offset_reset` / `rollback_offsets`), dry-run by default: without
`--execute` they read the cluster, print the plan and change nothing.

Exit codes (both commands):
  0  done (dry run printed, or everything executed and verified)
  1  executed, but some partition failed (see the RESULT column); an election or a reset that
     Kafka refused for an ACL on every partition (ALTER on CLUSTER; READ on GROUP or TOPIC:
     nothing changed) is 3
  2  bad command line (click's usage error)
  3  could not run: cluster unreachable, unknown topic/partition, invalid strategy value,
     unreadable --from-file, nothing committed to shift from; or what it acts on is hidden from
     the principal: a named topic or group it may not DESCRIBE (an authorization error naming
     the ACL and its grant), or, for an election of all partitions, partitions the brokers hold
     that its metadata leaves out (or totals it cannot check); nothing is changed then
  4  refused by a safety rule: the group is not Empty (a share group: also one that does not
     exist), or the --save-to file already exists

`reset-offsets --share-group G` resets a share group's start offsets the same way (`share_reset`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError

from kafka_health.cli import kafka_options, quiet, share_reset
from kafka_health.cli.kafka_options import Bootstrap
from kafka_health.collect import security_errors
from kafka_health.collect.kafka_admin import AdminCallError, KafkaAdmin
from kafka_health.models.policy import OffsetResetRequest, format_duration
from kafka_health.plan.offset_reset_plan import OffsetResetPlan
from kafka_health.remediate import access

OK, PARTIAL, FAILED, REFUSED = 0, 1, 3, 4


class Output(StrEnum):
    table = "table"
    json = "json"


OutputOpt = Annotated[Output, typer.Option("--output", "-o", help="table or json.")]
Execute = Annotated[bool, typer.Option("--execute", help="Act. Without it: print the plan, change nothing.")]


def _fail(message: str, code: int = FAILED) -> typer.Exit:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    return typer.Exit(code)


def _refuse(problems: list[str], consequence: str) -> typer.Exit:
    """Each problem on stderr, the last with what that means (nothing changed); exit 3."""
    for problem in problems[:-1]:
        typer.secho(f"error: {problem}", fg=typer.colors.RED, err=True)
    return _fail(f"{problems[-1]}; {consequence}")


def _denied(part: str, errors: Iterable[tuple[str | None, str | None]]) -> None:
    """On stderr, once per missing ACL: which operation on which resource (and the grant), for
    per-partition errors `(error text, resource name)` that are authorization failures."""
    seen: set[str] = set()
    for error, resource in errors:
        message = security_errors.authorization_denied(part, error or "", resource)
        if message is not None and message not in seen:
            seen.add(message)
            typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=False)]
    lines = [
        "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=False)).rstrip()
        for row in [header, *rows]
    ]
    return "\n".join(lines) + "\n"


def _admin(bootstrap: str, command_config: Path | None) -> KafkaAdmin:
    return KafkaAdmin(kafka_options.connection(bootstrap, command_config))


# --------------------------------------------------------------------------------------------
# reset-offsets

_ISO_DURATION = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$")


def parse_cli_duration(text: str) -> str:
    """ISO 8601 `PnDTnHnMnS` (as kafka-consumer-groups --by-duration takes) or Go-style `30m` → Go-style."""
    m = _ISO_DURATION.match(text.strip().upper())
    if m and any(m.groups()):
        days, hours, minutes, seconds = (float(g) if g else 0.0 for g in m.groups())
        return format_duration(timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds))
    return text.strip()


def parse_cli_datetime(text: str) -> datetime:
    """ISO 8601; without a zone it is UTC."""
    value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _targets(topics: list[str]) -> tuple[list[str], list[dict[str, Any]]]:
    whole, parts = [], []
    for spec in topics:
        name, sep, numbers = spec.partition(":")
        if not sep:
            whole.append(name)
            continue
        for n in numbers.split(","):
            parts.append({"topic": name, "partition": int(n)})
    return whole, parts


def _offset(value: int | None, unknown: str = "-") -> str:
    return unknown if value is None else str(value)


# (topic, partition, committed now, offset to commit, note)
OffsetChange = tuple[str, int, int | None, int | None, str | None]


def _echo_offset_changes(group: str, changes: Iterable[OffsetChange], *, unknown_target: str) -> None:
    """The CURRENT-OFFSET → NEW-OFFSET table, alike for a reset plan and for a rollback."""
    rows = [
        [group, topic, str(partition), _offset(current), _offset(target, unknown_target), note or ""]
        for topic, partition, current, target, note in changes
    ]
    typer.echo(
        _table(["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET", "NOTE"], rows), nl=False
    )


def _label(kind: str) -> str:
    return "share group" if kind == "share" else "group"


def _print_plan(plan: OffsetResetPlan, output: Output, what: str, kind: str = "consumer") -> None:
    """The plan under a header that says what happens to it: EXECUTING, DRY RUN or NOT EXECUTED."""
    if output is Output.json:
        typer.echo(plan.model_dump_json(indent=2))
        return
    when = f" (offsets at {plan.timestamp.isoformat()})" if plan.timestamp else ""
    typer.echo(f"Offset reset of {_label(kind)} {plan.group}, strategy {plan.strategy}{when}, {what}:")
    _echo_offset_changes(
        plan.group,
        [(e.topic, e.partition, e.current, e.target, e.note) for e in plan.entries],
        unknown_target="?",
    )


Group = Annotated[str | None, typer.Option("--group", "-g", help="Consumer group id.")]
Topics = Annotated[
    list[str] | None,
    typer.Option("--topic", "-t", help="TOPIC (all partitions) or TOPIC:0,1 (repeatable)."),
]
ToEarliest = Annotated[bool, typer.Option("--to-earliest", help="To the log start offset.")]
ToLatest = Annotated[bool, typer.Option("--to-latest", help="To the log end offset.")]
ToDatetime = Annotated[
    str | None,
    typer.Option(
        "--to-datetime", help="To the first offset at or after this ISO 8601 time (UTC if no zone)."
    ),
]
ByDuration = Annotated[
    str | None,
    typer.Option("--by-duration", help="To the first offset at or after now minus this (PnDTnHnM or 30m)."),
]
ShiftBy = Annotated[
    int | None, typer.Option("--shift-by", help="Move the committed offset by N (negative: back).")
]
ToOffset = Annotated[int | None, typer.Option("--to-offset", help="To this offset.")]
SaveTo = Annotated[
    Path | None,
    typer.Option(
        "--save-to",
        help="With --execute: save the offsets before the reset here (JSON; a .csv "
        "beside it for kafka-consumer-groups --from-file). Default: ./<group>-offsets-<time>.json.",
    ),
]
FromFile = Annotated[
    Path | None,
    typer.Option(
        "--from-file",
        help="Roll back: restore the offsets saved in this file (offsets.json, "
        "or topic,partition,offset CSV).",
        exists=True,
        dir_okay=False,
    ),
]


def reset_offsets(
    bootstrap_servers: Bootstrap,
    group: Group = None,
    share_group: share_reset.ShareGroup = None,
    command_config: kafka_options.CommandConfig = None,
    topic: Topics = None,
    to_earliest: ToEarliest = False,
    to_latest: ToLatest = False,
    to_datetime: ToDatetime = None,
    by_duration: ByDuration = None,
    shift_by: ShiftBy = None,
    to_offset: ToOffset = None,
    execute: Execute = False,
    save_to: SaveTo = None,
    from_file: FromFile = None,
    output: OutputOpt = Output.table,
    verbose: quiet.Verbose = False,
    log_file: quiet.LogFile = None,
) -> None:
    """Reset a consumer group's offsets, like `kafka-consumer-groups --reset-offsets` (a share
    group's start offsets with --share-group, like `kafka-share-groups --reset-offsets`: only
    --to-earliest, --to-latest, --to-datetime, --to-offset or --from-file).

    Only while the group is Empty; targets clamped to [log start, log end]; the offsets before
    the reset are saved to a file first (`--from-file` restores them).

    The named topics and the group must be visible to the principal: one it may not DESCRIBE is an
    authorization error naming that ACL (never "does not exist"), and nothing is reset.

    Exit codes: 0 done, 1 some partition failed, 2 usage error, 3 could not run (also: a topic or
    the group hidden from the principal, or Kafka refusing every partition for an ACL), 4 refused
    (group not Empty, --save-to file exists).
    """
    quiet.start(verbose, log_file)
    group, kind = share_reset.group_and_kind(group, share_group)
    strategy = {
        "earliest": True if to_earliest else None,
        "latest": True if to_latest else None,
        "toDatetime": to_datetime,
        "byDuration": by_duration,
        "shiftBy": shift_by,
        "toOffset": to_offset,
    }
    strategies = sum(value is not None for value in strategy.values())
    if kind == "share":
        share_reset.check_share_strategy(strategy)
    if from_file is not None:
        if strategies:
            raise _fail("--from-file restores saved offsets: give no other strategy")
        _rollback(bootstrap_servers, command_config, group, from_file, execute, output, kind)
        return
    if strategies != 1:
        raise _fail(
            "give exactly one of --to-earliest, --to-latest, --to-datetime, --by-duration, --shift-by, "
            "--to-offset (or --from-file)"
        )
    if not topic:
        raise _fail("name what to reset: --topic TOPIC or --topic TOPIC:0,1")
    request = _request(group, topic, strategy)
    _reset(bootstrap_servers, command_config, request, group, save_to, execute, output, kind)


def _request(group: str, topic: list[str], strategy: dict[str, Any]) -> OffsetResetRequest:
    """The operator's OffsetResetRequest for this command line (exit 3 naming what is invalid)."""
    try:
        whole, parts = _targets(topic)
        to_datetime, by_duration = strategy["toDatetime"], strategy["byDuration"]
        return OffsetResetRequest.model_validate(
            {
                "id": "cli",
                "group": group,
                "topics": whole or None,
                "partitions": parts or None,
                **strategy,
                "toDatetime": parse_cli_datetime(to_datetime) if to_datetime else None,
                "byDuration": parse_cli_duration(by_duration) if by_duration else None,
            }
        )
    except (ValueError, ValidationError) as exc:
        detail = "; ".join(e["msg"] for e in exc.errors()) if isinstance(exc, ValidationError) else str(exc)
        raise _fail(f"invalid request: {detail}") from None


def _reset(
    bootstrap: str,
    command_config: Path | None,
    request: OffsetResetRequest,
    group: str,
    save_to: Path | None,
    execute: bool,
    output: Output,
    kind: str = "consumer",
) -> None:
    """Plan the reset live; refuse it (printing the plan as NOT EXECUTED), print it as a dry
    run, or save the offsets and reset them."""
    from kafka_health.remediate.offset_reset import KINDS, FileStore, apply_offset_reset, plan_live

    ops, now = KINDS[kind], datetime.now(UTC)
    with _admin(bootstrap, command_config) as admin:
        try:
            plan, live_group = plan_live(admin, request, now, ops.read)
        except AdminCallError as exc:
            raise _fail(f"cannot read the cluster: {exc}") from None
        except access.NotVisible as exc:
            raise _refuse(exc.problems, "nothing reset") from None
        path = save_to or Path(f"{group}-offsets-{now.strftime('%Y%m%dT%H%M%SZ')}.json")
        # Refusals first, then the plan for reference: a refused reset never reads "EXECUTING".
        if (refusal := _refusal(plan, ops.refusal(group, live_group), execute, path)) is not None:
            typer.secho(f"error: {refusal[0]}", fg=typer.colors.RED, err=True)
            _print_plan(plan, output, "NOT EXECUTED", kind)
            raise typer.Exit(refusal[1])
        _print_plan(plan, output, "EXECUTING" if execute else "DRY RUN (use --execute to reset)", kind)
        if not execute:
            return
        outcome = apply_offset_reset(admin, FileStore(path), plan, saved_name=str(path), kind=ops)
    _report(outcome, output, path, ops.alter_call)


def _refusal(plan: OffsetResetPlan, busy: str | None, execute: bool, path: Path) -> tuple[str, int] | None:
    """Why the reset may not run, with its exit code: no target (3), the group not Empty (`busy`)
    or the --save-to file there already (4); None when it may."""
    if not plan.executable:
        return ("; ".join([*plan.problems, *plan.missing][:10]) or "a partition has no target", FAILED)
    if busy:
        return (busy, REFUSED)
    if execute and path.exists():
        return (_save_to_exists(path), REFUSED)
    return None


def _save_to_exists(path: Path) -> str:
    return (
        f"{path} already exists (it may hold the offsets before an earlier reset): nothing changed; "
        "give --save-to a new file name"
    )


def _report(
    outcome: Any, output: Output, save_to: Path | None = None, call: str = "alter_consumer_group_offsets"
) -> None:
    from kafka_health.remediate.offset_reset import ResetState

    if output is Output.json:
        typer.echo(outcome.model_dump_json(indent=2))
    else:
        rows = [
            [
                outcome.group,
                p.topic,
                str(p.partition),
                _offset(p.before),
                _offset(p.target),
                _offset(p.after),
                "ok"
                if p.ok
                else (p.note if p.target is None and p.error is None else (p.error or "not verified")),
            ]
            for p in outcome.partitions
        ]
        if rows:
            typer.echo(
                _table(["GROUP", "TOPIC", "PARTITION", "BEFORE", "TARGET", "COMMITTED", "RESULT"], rows),
                nl=False,
            )
        typer.echo(outcome.message)
    if outcome.state is ResetState.ALREADY_APPLIED and save_to is not None:
        raise _fail(_save_to_exists(save_to), REFUSED)  # created between the check and the reset
    if outcome.state in (ResetState.NOT_EMPTY, ResetState.ALREADY_APPLIED):
        raise _fail(outcome.message, REFUSED)
    if outcome.state is ResetState.FAILED:
        _denied(
            f"{call}:{outcome.group}",
            ((p.error, p.topic) for p in outcome.partitions if not p.ok),
        )
        # Kafka refused every partition for an ACL: nothing changed, it could not run (3), as for
        # any authorization error; 1 is for a reset that changed part of the offsets.
        refused = outcome.denied() is not None and not any(p.ok for p in outcome.partitions)
        raise typer.Exit(PARTIAL if outcome.partitions and not refused else FAILED)


def _rollback(
    bootstrap: str,
    command_config: Path | None,
    group: str,
    path: Path,
    execute: bool,
    output: Output,
    kind: str = "consumer",
) -> None:
    from kafka_health.remediate.offset_reset import KINDS, SavedOffsets, rollback_offsets, rollback_plan

    ops = KINDS[kind]
    try:
        saved = SavedOffsets.from_file(path, group, kind)
    except (ValueError, OSError, ValidationError) as exc:
        raise _fail(f"cannot read {path}: {exc}") from None
    with _admin(bootstrap, command_config) as admin:
        try:
            live_group = ops.read(admin, saved.group)
            listed = {p.topic for p in admin.metadata().partitions}
            check = access.check_named_topics(admin, {p.topic for p in saved.partitions}, listed)
            if not check.ok:
                raise access.NotVisible(check.problems())
            entries = rollback_plan(admin, saved, ops)
        except AdminCallError as exc:
            raise _fail(f"cannot read the group: {exc}") from None
        except access.NotVisible as exc:
            raise _refuse(exc.problems, "nothing restored") from None
        busy = ops.refusal(saved.group, live_group)
        if busy:
            typer.secho(f"error: {busy}", fg=typer.colors.RED, err=True)
        if output is Output.table:
            what = (
                "NOT EXECUTED" if busy else "EXECUTING" if execute else "DRY RUN (use --execute to restore)"
            )
            typer.echo(
                f"Roll back {_label(kind)} {saved.group} to the offsets saved at {saved.taken_at.isoformat()} "
                f"in {path}, {what}:"
            )
            _echo_offset_changes(
                saved.group,
                [(e.topic, e.partition, e.before, e.target, e.note) for e in entries],
                unknown_target="-",
            )
        if busy:
            raise typer.Exit(REFUSED)
        if not execute:
            if output is Output.json:
                typer.echo(json.dumps([e.model_dump(mode="json") for e in entries], indent=2))
            return
        outcome = rollback_offsets(admin, saved, kind=ops)
    _report(outcome, output, call=ops.alter_call)
