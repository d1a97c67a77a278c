"""Kafka admin APIs → `ClusterSnapshot` (stage 1 of the flow).

`kafka_admin.KafkaAdmin` is the one place each Kafka admin call is made (bounded by a timeout);
`snapshot.collect_snapshot` turns those calls into a snapshot that lists whatever it could not read.
"""
