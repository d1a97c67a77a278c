# The commands a newcomer runs (see README): `make demo`, `make check` (minutes) and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PY := .venv/bin/python

.PHONY: help setup demo check test lint typecheck unit crd clean-testbed

help:
	@echo "make demo   - start the local real Kafka cluster and show a diagnosis of it"
	@echo "make check  - lint, format, types, import layers and the unit tests (no Kafka, no k8s; ~2 min)"
	@echo "make test   - set up (venv, Kafka jars, k8s binaries) and run lint, types and the whole suite"
	@echo "make lint | typecheck | unit | crd"

setup:
	@bash hack/setup.sh

demo: setup
	@bash hack/demo.sh

test: setup
	@bash hack/test.sh

# What a change must pass before the real-component suite: the same lint, format, types and layer
# rules as `make test`, and the unit tests (two workers), without Kafka, Kubernetes or Spark.
check: setup
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy
	.venv/bin/lint-imports
	.venv/bin/pytest tests/unit -q -n 2

lint: setup
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .

typecheck: setup
	.venv/bin/mypy

unit: setup
	.venv/bin/pytest tests/unit -q

crd: setup
	PYTHONPATH=operator:spark:. .venv/bin/kafka-health crd > crds/kafkahealthpolicies.kafkahealth.io.yaml
	cp crds/*.yaml charts/kafka-health-operator/crds/

clean-testbed: setup
	.venv/bin/kafka-health testbed down --purge
