"""Durations: Go-style strings ("30s", "5m", "1h30m"), the format CEL's duration() parses."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic_core import core_schema

from kafka_health.models.policy.constants import DURATION_MAX
from kafka_health.models.policy.rules import CelRule, spec_error

DURATION_PATTERN = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
DURATION_HINT = 'use a number and a unit, e.g. "30s", "5m", "1h30m" (units: ms, s, m, h)'


def parse_duration(text: str) -> timedelta:
    """Parse a Go-style duration ("1h30m", "500ms"); ValueError with the accepted format otherwise."""
    if not re.fullmatch(DURATION_PATTERN, text):
        raise ValueError(f"{text!r} is not a duration: {DURATION_HINT}")
    seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in _DURATION_PART.findall(text))
    try:
        return timedelta(seconds=seconds)
    except OverflowError:
        raise ValueError(f"{text!r} is too long: at most {DURATION_MAX}") from None


def format_duration(value: timedelta) -> str:
    """The inverse of parse_duration for whole seconds (used in messages)."""
    total = int(value.total_seconds())
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    parts = [f"{hours}h" if hours else "", f"{minutes}m" if minutes else "", f"{seconds}s" if seconds else ""]
    return "".join(parts) or "0s"


@dataclass(frozen=True)
class DurationRule:
    """Format and bounds of a duration field, as a pydantic check and as CEL on the CRD."""

    minimum: str | None = None
    exclusive_minimum: bool = False
    maximum: str | None = DURATION_MAX
    whole_days: bool = False

    def _rules(self) -> list[tuple[CelRule, Callable[[timedelta], bool]]]:
        # A malformed string is reported by `pattern`; the guard keeps CEL from adding a
        # second, cryptic "type conversion error" for it.
        guard = f"!self.matches(r'{DURATION_PATTERN}') || "
        rules: list[tuple[CelRule, Callable[[timedelta], bool]]] = []
        if self.minimum is not None:
            low = parse_duration(self.minimum)
            if self.exclusive_minimum:
                rule = CelRule(
                    f"{guard}duration(self) > duration('{self.minimum}')", f"must be more than {self.minimum}"
                )
                rules.append((rule, lambda d: d > low))
            else:
                rule = CelRule(
                    f"{guard}duration(self) >= duration('{self.minimum}')", f"must be at least {self.minimum}"
                )
                rules.append((rule, lambda d: d >= low))
        if self.maximum is not None:
            high = parse_duration(self.maximum)
            rule = CelRule(
                f"{guard}duration(self) <= duration('{self.maximum}')", f"must be at most {self.maximum}"
            )
            rules.append((rule, lambda d: d <= high))
        if self.whole_days:
            rule = CelRule(
                f"{guard}duration(self).getMilliseconds() % 86400000 == 0",
                "must be a whole number of days (24h, 48h, ...): history is kept by UTC date",
            )
            rules.append((rule, lambda d: d.total_seconds() % 86400 == 0))
        return rules

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        rules = self._rules()

        def check(value: str) -> str:
            try:
                parsed = parse_duration(value)
            except ValueError as exc:
                raise spec_error(str(exc)) from None
            for rule, ok in rules:
                if not ok(parsed):
                    raise spec_error(f"{rule.message} (got {value!r})")
            return value

        return core_schema.no_info_after_validator_function(check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        out = handler(schema)
        out.update(pattern=DURATION_PATTERN, maxLength=32)
        rules = [r.as_schema() for r, _ in self._rules()]
        if rules:
            out["x-kubernetes-validations"] = rules
        return out


Duration = Annotated[str, DurationRule()]
PositiveDuration = Annotated[str, DurationRule(minimum="0s", exclusive_minimum=True)]
RequestTimeout = Annotated[str, DurationRule(minimum="1s", maximum="5m")]
"""librdkafka takes socket.timeout.ms in 10..300000 only (a larger value fails every cycle)."""
RetentionDuration = Annotated[str, DurationRule(minimum="24h", whole_days=True)]
IntervalDuration = Annotated[str, DurationRule(minimum="10s")]
WindowDuration = Annotated[str, DurationRule(minimum="0s", exclusive_minimum=True, maximum="24h")]
