"""Stage 3 of the flow: snapshot + history → Spark checks → `Diagnosis` (no Kafka, no Kubernetes)."""

from kafka_health.diagnose.run import run_diagnosis

__all__ = ["run_diagnosis"]
