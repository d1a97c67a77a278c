"""The whole resource, and the errors of an invalid spec that name the field and the fix."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import Field, ValidationError

from kafka_health.models.policy.base import SpecModel
from kafka_health.models.policy.spec import KafkaHealthPolicySpec
from kafka_health.models.policy.status import KafkaHealthPolicyStatus


class KafkaHealthPolicy(SpecModel):
    """The whole resource, as read from the API server or a YAML file."""

    api_version: Literal["kafkahealth.io/v1alpha1"] = Field(
        "kafkahealth.io/v1alpha1", description="kafkahealth.io/v1alpha1"
    )
    kind: Literal["KafkaHealthPolicy"] = Field("KafkaHealthPolicy", description="KafkaHealthPolicy")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Standard object metadata.")
    spec: KafkaHealthPolicySpec = Field(description="What to watch and what may be done.")
    status: KafkaHealthPolicyStatus | None = Field(None, description="What the operator saw and did.")


# --------------------------------------------------------------------------------------------
# Errors that name the field and the fix


def _path(loc: Iterable[int | str]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


_GENERIC = {
    "missing": "required: set this field",
    "extra_forbidden": "unknown field: check the spelling and case (kubectl explain kafkahealthpolicy.spec)",
}


def error_messages(exc: ValidationError, root: str = "spec") -> list[str]:
    """One 'spec.path.to[0].field: what is wrong and how to fix it' line per error."""
    lines = []
    for err in exc.errors(include_url=False):
        loc = [p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
        path = _path([root, *loc]) if root else _path(loc)
        extra = (err.get("ctx") or {}).get("field_path")
        if extra:
            path += extra
        message = _GENERIC.get(err["type"], err["msg"])
        if message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        lines.append(f"{path}: {message}")
    return lines


class PolicyError(ValueError):
    """An invalid spec; `messages` name each field and the fix."""

    def __init__(self, messages: list[str]) -> None:
        super().__init__("invalid KafkaHealthPolicy spec:\n  " + "\n  ".join(messages))
        self.messages = messages


def parse_spec(spec: dict[str, Any]) -> KafkaHealthPolicySpec:
    """Validate a spec as the API server would; PolicyError with one line per problem otherwise."""
    try:
        return KafkaHealthPolicySpec.model_validate(spec)
    except ValidationError as exc:
        raise PolicyError(error_messages(exc)) from None


def parse_status(status: dict[str, Any] | None) -> KafkaHealthPolicyStatus:
    """The status as last written (empty when none)."""
    return KafkaHealthPolicyStatus.model_validate(status or {})
