"""Kafka protocol messages kafka-python 3.0 does not ship, described here in its JSON schema
format (`kafka.protocol.api_message.ApiMessage` with `load_json=` this package) so the client can
encode and decode them: the share-group (KIP-932) and streams-group (KIP-1071) admin calls.

Each `<Name>.json` states the fields and the versions Kafka 4.4's brokers serve, written from
Kafka's published message definitions (field order and version gates checked against the
4.4.0 client's generated classes); `tests/collect/test_kafka_schemas.py` round-trips them and
the real-testbed tests check every answer against Kafka's own tool."""
