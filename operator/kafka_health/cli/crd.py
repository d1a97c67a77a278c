"""`kafka-health crd`: print the KafkaHealthPolicy CRD generated from the pydantic models."""

from __future__ import annotations

import typer

from kafka_health.resources.crd import crd_yaml


def crd() -> None:
    """Print the KafkaHealthPolicy CRD as YAML (commit it: kafka-health crd > crds/kafkahealthpolicies.kafkahealth.io.yaml)."""
    typer.echo(crd_yaml(), nl=False)
