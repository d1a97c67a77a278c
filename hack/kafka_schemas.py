"""Write the wire shape of the Kafka messages `kafka_health/collect/kafka_schemas/` describes, from
the JSON message definitions inside a Kafka release's kafka-clients jar (the testbed's cache):
`python hack/kafka_schemas.py [KAFKA_VERSION]`. Only what encodes a message is kept (names, types,
versions, nullability, tags, defaults, nested fields; common structs inlined), not Kafka's
comments and field descriptions; `tests/collect/test_kafka_schemas.py` checks the files against
the jar of the testbed's Kafka version."""

from __future__ import annotations

import json
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

MESSAGES = [
    "ShareGroupDescribeRequest",
    "ShareGroupDescribeResponse",
    "DescribeShareGroupOffsetsRequest",
    "DescribeShareGroupOffsetsResponse",
    "AlterShareGroupOffsetsRequest",
    "AlterShareGroupOffsetsResponse",
    "StreamsGroupDescribeRequest",
    "StreamsGroupDescribeResponse",
]
TOP = ("apiKey", "type", "name", "validVersions", "flexibleVersions")
FIELD = ("name", "type", "versions", "nullableVersions", "taggedVersions", "tag", "default", "ignorable")
OUT = Path(__file__).resolve().parent.parent / "operator" / "kafka_health" / "collect" / "kafka_schemas"


def kafka_definition(jar: Path, name: str) -> dict[str, Any]:
    """Kafka's own definition of message `name`, comments removed."""
    with zipfile.ZipFile(jar) as z:
        text = z.read(f"common/message/{name}.json").decode()
    return dict(json.loads(re.sub(r"(?m)^\s*//.*$|\s//[^\"\n]*$", "", text)))


def wire_shape(definition: dict[str, Any]) -> dict[str, Any]:
    """What encodes the message: `TOP` keys, and every field's `FIELD` keys, common structs inlined."""
    structs = {s["name"]: s["fields"] for s in definition.get("commonStructs", [])}

    def shape(field: dict[str, Any]) -> dict[str, Any]:
        out = {k: field[k] for k in FIELD if k in field}
        inner = field.get("fields") or structs.get(field["type"].removeprefix("[]"))
        if inner:
            out["fields"] = [shape(f) for f in inner]
        return out

    top = {k: definition[k] for k in TOP}
    top["fields"] = [shape(f) for f in definition["fields"]]
    return top


def main(version: str) -> None:
    jar = (
        Path.home() / ".cache" / "kafka-health" / "kafka" / version / "libs" / f"kafka-clients-{version}.jar"
    )
    for name in MESSAGES:
        text = json.dumps(wire_shape(kafka_definition(jar, name)), indent=1) + "\n"
        (OUT / f"{name}.json").write_text(text)
        print(f"{name}.json ({len(text)} bytes)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "4.4.0")
