"""The bases of every model: camelCase on the wire, CEL rules on the schema, sections default to {}."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from kafka_health.models.policy.rules import CelRule, cel_schema_extra


class SpecModel(BaseModel):
    """Spec models: unknown fields are refused, camelCase on the wire, `cel_rules` on the schema."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        json_schema_extra=cel_schema_extra,
    )
    cel_rules: ClassVar[tuple[CelRule, ...]] = ()


class StatusModel(SpecModel):
    """Status is written by the operator: tolerate fields a newer or older operator wrote."""

    model_config = ConfigDict(extra="ignore")


def section(model: type[BaseModel], description: str) -> Any:
    """A nested object that is always present: defaults to {} on the API server, model() here."""
    return Field(default_factory=model, description=description, json_schema_extra={"default": {}})
