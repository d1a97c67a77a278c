#!/usr/bin/env bash
# The README's test command (`make test` runs this after hack/setup.sh): fetch what the tests
# need into the cache, check lint and types, then run the whole suite against the real components.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"

t0=$(date +%s)
echo "== fetch: Apache Kafka jars and their class archives (cached; 3.9 and 4.1 for the compatibility tests)"
kafka-health testbed fetch
kafka-health testbed fetch --kafka-version 3.9.x
kafka-health testbed fetch --kafka-version 4.1.x
echo "== fetch: etcd, kube-apiserver, kubectl (built from the Go module proxy once, cached)"
KAFKA_HEALTH_K8S_BIN=$(bash hack/k8s-binaries.sh)
export KAFKA_HEALTH_K8S_BIN
echo "$KAFKA_HEALTH_K8S_BIN"
echo "== fetch: helm (built from the Go module proxy once, cached)"
KAFKA_HEALTH_HELM=$(bash hack/helm.sh)
export KAFKA_HEALTH_HELM
echo "$KAFKA_HEALTH_HELM"
echo "== lint: hadolint (Dockerfile)"
bash hack/lint-image.sh
echo "== lint: helm lint --strict"
"$KAFKA_HEALTH_HELM" lint --strict charts/kafka-health-operator
echo "== lint: ruff"
ruff check .
ruff format --check .
echo "== types: mypy"
mypy
echo "== layers: import-linter"
lint-imports
# Side by side (pytest-xdist): a whole file per worker (a module's cluster starts once), the
# longest files first (tests/file_seconds.json; xdist's own reordering by test count is off).
# Each worker has its own Kafka ports (3200 apart from KAFKA_HEALTH_TEST_PORT: down from the
# default 29092, clear of the kernel's ephemeral ports), clusters and control plane
# (tests/parallel.py). KAFKA_HEALTH_TEST_WORKERS=0 runs the suite in one process. Two by default:
# on 2 cores three took 32 min instead of 35 (2026-11-27), but at a load of 15-35 a test that
# stops a second broker mid-roll and the frozen-replica hand-over have failed; CI is one attempt.
workers=${KAFKA_HEALTH_TEST_WORKERS:-2}
reports=build/test-reports
rm -rf "$reports" && mkdir -p "$reports"
echo "== tests: pytest ($workers workers; reports in $reports)"
# pytest exits 5 when it collects nothing: that is a failure here, not a pass. A path is always
# given (tests/ unless the arguments name one: `-k leader` alone runs tests/ -k leader), so that
# tests/conftest.py, which adds --durations-report, loads before the options are read.
paths=0
for arg in "$@"; do
  if [[ "$arg" != -* && -e "${arg%%::*}" ]]; then paths=1; fi
done
[ "$paths" = 1 ] || set -- "$@" tests
rc=0
pytest -n "$workers" --dist loadfile --no-loadscope-reorder \
  --junitxml="$reports/junit.xml" --durations-report "$reports" "$@" || rc=$?
echo "== reports: $reports/junit.xml, $reports/durations.txt (every file and test, longest first)"
echo "== make test: done in $(( $(date +%s) - t0 ))s (pytest exit $rc)"
exit "$rc"
