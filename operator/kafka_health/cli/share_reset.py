"""`kafka-health reset-offsets --share-group G`: what the command line of a share group's (KIP-932)
offset reset may hold. The rest is the consumer group's reset (`remediation_cli`): the same plan,
refusals, saved offsets and `--from-file` undo, on the group's start offsets.

Usage errors (exit 2): `--group` with `--share-group` (or neither), and a strategy that
`kafka-share-groups --reset-offsets` does not take (`--by-duration`, `--shift-by`), named.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kafka_health.plan.offset_reset_plan import SHARE_STRATEGIES

ShareGroup = Annotated[
    str | None,
    typer.Option(
        "--share-group",
        help="Share group id (KIP-932): reset its start offsets instead, as kafka-share-groups "
        "--reset-offsets (only while it exists and is Empty).",
    ),
]

FLAGS = {
    "earliest": "--to-earliest",
    "latest": "--to-latest",
    "toDatetime": "--to-datetime",
    "byDuration": "--by-duration",
    "shiftBy": "--shift-by",
    "toOffset": "--to-offset",
}


def group_and_kind(group: str | None, share_group: str | None) -> tuple[str, str]:
    """The group id and its kind ("consumer" or "share"); a usage error unless exactly one is given."""
    if group is not None and share_group is not None:
        raise typer.BadParameter(
            "--group and --share-group are mutually exclusive: give one of them", param_hint="--share-group"
        )
    if share_group is not None:
        return share_group, "share"
    if group is None:
        raise typer.BadParameter(
            "name the group: --group G (a consumer group) or --share-group G", param_hint="--group"
        )
    return group, "consumer"


def check_share_strategy(strategy: dict[str, Any]) -> None:
    """A usage error naming each strategy given that a share group's reset does not take."""
    refused = [
        FLAGS[name] for name, value in strategy.items() if value is not None and name not in SHARE_STRATEGIES
    ]
    if refused:
        takes = ", ".join(FLAGS[name] for name in SHARE_STRATEGIES)
        raise typer.BadParameter(
            f"not a share-group strategy (kafka-share-groups --reset-offsets takes {takes}, or --from-file)",
            param_hint=" and ".join(refused),
        )
