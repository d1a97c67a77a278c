# The two commands a newcomer runs (see README): `make demo` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PY := .venv/bin/python

.PHONY: help setup demo test lint typecheck unit crd clean-testbed

help:
	@echo "make demo   - start the local real Kafka cluster and show a diagnosis of it"
	@echo "make test   - set up (venv, Kafka jars, k8s binaries) and run lint, types and the whole suite"
	@echo "make lint | typecheck | unit | crd"

setup:
	@bash hack/setup.sh

demo: setup
	@bash hack/demo.sh

test: setup
	@bash hack/test.sh

lint: setup
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .

typecheck: setup
	.venv/bin/mypy

unit: setup
	.venv/bin/pytest tests/unit -q

clean-testbed: setup
	.venv/bin/kafka-health testbed down --purge
