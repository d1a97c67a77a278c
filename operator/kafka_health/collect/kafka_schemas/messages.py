"""The request and response classes of the messages described in this package (see its
docstring): kafka-python builds each from `<class name>.json` here."""

from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

import kafka_health.collect.kafka_schemas as _here


class ShareGroupDescribeRequest(ApiMessage, load_json=_here):  # type: ignore[call-arg]
    pass


class ShareGroupDescribeResponse(ApiMessage, load_json=_here):  # type: ignore[call-arg]
    pass


class DescribeShareGroupOffsetsRequest(ApiMessage, load_json=_here):  # type: ignore[call-arg]
    pass


class DescribeShareGroupOffsetsResponse(ApiMessage, load_json=_here):  # type: ignore[call-arg]
    pass


class AlterShareGroupOffsetsRequest(ApiMessage, load_json=_here):  # type: ignore[call-arg]
    pass


class AlterShareGroupOffsetsResponse(ApiMessage, load_json=_here):  # type: ignore[call-arg]
    pass


class StreamsGroupDescribeRequest(ApiMessage, load_json=_here):  # type: ignore[call-arg]
    pass


class StreamsGroupDescribeResponse(ApiMessage, load_json=_here):  # type: ignore[call-arg]
    pass
