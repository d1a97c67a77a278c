"""The local real test cluster: Apache Kafka in KRaft mode (and, later, a Kubernetes control plane).

This package is for tests and the demo; the operator never imports it.
"""
