"""Rule plumbing: one declaration gives the CEL rule (CRD) and the pydantic check."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic_core import PydanticCustomError, core_schema


@dataclass(frozen=True)
class CelRule:
    """One `x-kubernetes-validations` entry. `field_path` (e.g. ".sasl") names the field in the error."""

    rule: str
    message: str
    field_path: str | None = None

    def as_schema(self) -> dict[str, str]:
        out = {"rule": self.rule, "message": self.message}
        if self.field_path:
            out["fieldPath"] = self.field_path
        return out


def cel_schema_extra(schema: dict[str, Any], cls: type) -> None:
    """A model's `cel_rules` on its schema, where the API server checks them."""
    rules: tuple[CelRule, ...] = getattr(cls, "cel_rules", ())
    if rules:
        schema["x-kubernetes-validations"] = [r.as_schema() for r in rules]


def spec_error(message: str, field_path: str | None = None) -> PydanticCustomError:
    """A validation error whose text is shown verbatim; `field_path` is appended to its location."""
    return PydanticCustomError("khp", message, {"field_path": field_path} if field_path else None)


def rule_error(rule: CelRule) -> PydanticCustomError:
    """The pydantic error of a broken CEL rule: the same message the API server gives."""
    return spec_error(rule.message, rule.field_path)


@dataclass(frozen=True)
class FieldCel:
    """A CEL rule on one field's own value (`self` is the value); the pydantic check is separate."""

    rule: CelRule
    max_length: int | None = None
    """For a string: its maxLength (the API server needs it to bound the rule's cost)."""

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        out = handler(schema)
        out.setdefault("x-kubernetes-validations", []).append(self.rule.as_schema())
        if self.max_length is not None:
            out["maxLength"] = self.max_length
        return out


@dataclass(frozen=True)
class Text:
    """A string with a pattern and a max length, checked with a message that says how to fix it."""

    pattern: str
    hint: str
    max_length: int = 253
    min_length: int = 1

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        compiled = re.compile(self.pattern)

        def check(value: str) -> str:
            if not (self.min_length <= len(value) <= self.max_length) or not compiled.fullmatch(value):
                raise spec_error(f"{value!r} is not valid: {self.hint}")
            return value

        return core_schema.no_info_after_validator_function(check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        out = handler(schema)
        out.update(pattern=self.pattern, maxLength=self.max_length, minLength=self.min_length)
        return out
