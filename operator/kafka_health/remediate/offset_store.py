"""Where an offset reset keeps the offsets it replaces: the saved-offsets record of one request.

`SavedOffsets` is the record (`offsets.json`, and `rollback.csv` in the `topic,partition,offset`
lines `kafka-consumer-groups --reset-offsets --from-file` takes); an `OffsetStore` keeps it: a
ConfigMap `khp-<policy>-offsets-<request id>` in the operator (`ConfigMapStore`), a file in the
CLI (`FileStore`). The record is written before the offsets are altered, and `create` fails when
it exists: that makes a reset run once per request id. Split from `offset_reset.py` (the executor).
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from kafka_health.k8s.client import K8s

LABEL_POLICY = "kafkahealth.io/policy"
LABEL_REQUEST = "kafkahealth.io/request"
OFFSETS_KEY = "offsets.json"
CSV_KEY = "rollback.csv"


class SavedPartition(BaseModel):
    model_config = ConfigDict(extra="forbid")

    topic: str
    partition: int
    offset: int | None = Field(None, description="None: the group had no committed offset here.")


class SavedOffsets(BaseModel):
    """The committed offsets of a group before a reset (`offsets.json`)."""

    model_config = ConfigDict(extra="forbid")

    group: str
    taken_at: datetime
    request_id: str | None = None
    kind: Literal["consumer", "share"] = Field(
        "consumer", description="The kind of group: share, a share group's start offsets."
    )
    partitions: list[SavedPartition]

    def to_csv(self) -> str:
        """`topic,partition,offset` lines (kafka-consumer-groups --reset-offsets --from-file);
        partitions without a committed offset are left out (nothing to restore)."""
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        for p in self.partitions:
            if p.offset is not None:
                writer.writerow([p.topic, p.partition, p.offset])
        return buf.getvalue()

    def data(self) -> dict[str, str]:
        # A consumer group's record reads as before share groups (no "kind"): older versions read it.
        text = self.model_dump_json(indent=2, exclude={"kind"} if self.kind == "consumer" else None)
        return {OFFSETS_KEY: text, CSV_KEY: self.to_csv()}

    @classmethod
    def from_data(cls, data: Mapping[str, str], group: str | None = None) -> SavedOffsets:
        if OFFSETS_KEY in data:
            return cls.model_validate_json(data[OFFSETS_KEY])
        if CSV_KEY in data:
            return cls.from_csv(data[CSV_KEY], group)
        raise ValueError(f"neither {OFFSETS_KEY} nor {CSV_KEY} in the saved offsets")

    @classmethod
    def from_csv(cls, text: str, group: str | None, kind: str = "consumer") -> SavedOffsets:
        if not group:
            raise ValueError("a CSV of offsets names no group: give the group")
        parts = []
        for number, row in enumerate(csv.reader(io.StringIO(text)), start=1):
            if not row or not "".join(row).strip():
                continue
            if len(row) != 3:
                raise ValueError(f"line {number}: expected topic,partition,offset")
            try:
                parts.append(SavedPartition(topic=row[0].strip(), partition=int(row[1]), offset=int(row[2])))
            except ValueError:
                raise ValueError(f"line {number}: partition and offset must be numbers") from None
        return cls.model_validate(
            {"group": group, "taken_at": datetime.now(UTC), "kind": kind, "partitions": parts}
        )

    @classmethod
    def from_file(cls, path: Path, group: str | None = None, kind: str | None = None) -> SavedOffsets:
        """`offsets.json` as saved by a reset, or `topic,partition,offset` CSV (then `group` is
        needed). `kind` given: the file must hold offsets of that kind of group (a CSV is taken
        as that kind)."""
        text = path.read_text()
        if text.lstrip().startswith("{"):
            saved = cls.model_validate_json(text)
            if group and group != saved.group:
                raise ValueError(f"{path} holds offsets of group {saved.group}, not {group}")
            if kind and kind != saved.kind:
                raise ValueError(f"{path} holds offsets of a {saved.kind} group, not of a {kind} group")
            return saved
        return cls.from_csv(text, group, kind or "consumer")


class OffsetStore(Protocol):
    """Where the offsets before a reset are kept. `create` must fail if `name` exists."""

    def describe(self, name: str) -> str: ...

    def load(self, name: str) -> dict[str, str] | None: ...

    def create(self, name: str, data: dict[str, str], labels: dict[str, str]) -> None: ...

    def discard(self, name: str) -> None:
        """Remove a record this store created (only when Kafka provably applied none of it)."""
        ...


class ConfigMapStore:
    """ConfigMaps in one namespace (the operator), optionally owned by the policy."""

    def __init__(self, k8s: K8s, namespace: str, owner_reference: dict[str, Any] | None = None) -> None:
        self.k8s, self.namespace, self.owner = k8s, namespace, owner_reference
        self._created: dict[str, str | None] = {}  # name → uid of a ConfigMap this store created

    def describe(self, name: str) -> str:
        return f"ConfigMap {self.namespace}/{name}"

    def load(self, name: str) -> dict[str, str] | None:
        return self.k8s.read_configmap(self.namespace, name)

    def create(self, name: str, data: dict[str, str], labels: dict[str, str]) -> None:
        self._created[name] = self.k8s.create_configmap(
            self.namespace, name, data, labels=labels, owner=self.owner
        )

    def discard(self, name: str) -> None:
        uid = self._created.get(name)
        if uid is None:
            raise ValueError(f"{self.describe(name)} was not created by this store: not deleting it")
        del self._created[name]
        self.k8s.delete_configmap(self.namespace, name, uid)


class FileStore:
    """Files (the CLI): `<name>` gets offsets.json, and the same path with `.csv` the rollback CSV."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._created = False

    @property
    def csv_path(self) -> Path:
        return (
            self.path.with_suffix(".csv")
            if self.path.suffix != ".csv"
            else self.path.with_suffix(".rollback.csv")
        )

    def describe(self, name: str) -> str:
        return f"{self.path} (and {self.csv_path})"

    def load(self, name: str) -> dict[str, str] | None:
        return {OFFSETS_KEY: self.path.read_text()} if self.path.exists() else None

    def create(self, name: str, data: dict[str, str], labels: dict[str, str]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("x") as f:  # "x": never overwrite earlier saved offsets
            f.write(data[OFFSETS_KEY])
        self.csv_path.write_text(data[CSV_KEY])
        self._created = True

    def discard(self, name: str) -> None:
        if not self._created:
            raise ValueError(f"{self.describe(name)} was not created by this run: not deleting it")
        self.csv_path.unlink(missing_ok=True)
        self.path.unlink(missing_ok=True)
        self._created = False


_NOT_DNS = re.compile(r"[^a-z0-9.-]")


def saved_offsets_name(policy_name: str, request_id: str) -> str:
    """`khp-<policy>-offsets-<request id>`, made a valid ConfigMap name (a request id may hold
    '_', a ConfigMap name may not: then a digest of the id is appended so names never collide)."""
    raw = f"khp-{policy_name}-offsets-{request_id}"
    name = _NOT_DNS.sub("-", raw.lower())
    if name != raw or len(name) > 253:
        digest = hashlib.sha256(raw.encode()).hexdigest()[:8]
        name = f"{name[:240].rstrip('-.')}-{digest}"
    return name


def label_value(value: str) -> str:
    """A valid label value (≤ 63, alphanumeric at both ends)."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "-", value)
    if len(cleaned) > 63:
        cleaned = cleaned[:54] + "-" + hashlib.sha256(value.encode()).hexdigest()[:8]
    return cleaned.strip("-._")
