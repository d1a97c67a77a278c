"""A restart safety verdict's parts shared by the rules' modules (`restart_safety`,
`reassignment_safety`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from kafka_health.models.reasons import BlockerRule

MAX_LISTED = 20


class Blocker(BaseModel):
    """One rule that forbids restarting the candidate now."""

    model_config = ConfigDict(extra="forbid")

    rule: BlockerRule = Field(description="The rule (kafka_health.models.reasons.BlockerRule), e.g. min_isr.")
    message: str
    partitions: list[str] = Field(
        default_factory=list, description=f"The first {MAX_LISTED} partitions concerned."
    )
