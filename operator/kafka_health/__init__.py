"""Kafka Health Operator: collect → diagnose → plan → remediate → report for Apache Kafka."""

__version__ = "0.1.0"
