#!/usr/bin/env bash
# The main job on the embedded default: a real local Kafka cluster, a demo topic, its state,
# then a diagnosis by embedded Spark of the cluster with faults injected (hack/demo_diagnose.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"

echo "== starting the local Kafka cluster (3 KRaft nodes on 127.0.0.1)"
bootstrap=$(kafka-health testbed up)
echo "bootstrap servers: $bootstrap"
kafka-health testbed status
echo "== demo topic"
kafka-health testbed tool kafka-topics --create --if-not-exists --topic demo-orders --partitions 6 \
  --replication-factor 3 >/dev/null
kafka-health testbed tool kafka-topics --describe --topic demo-orders
echo
bash hack/demo_diagnose.sh
echo
echo "The cluster keeps running: 'eval \"\$(.venv/bin/kafka-health testbed env)\"' to use it,"
echo "'.venv/bin/kafka-health testbed down' to stop it."
