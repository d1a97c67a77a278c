#!/usr/bin/env bash
# Demo, next step: break the running testbed on purpose, diagnose it, then put it back.
# Faults: a topic whose only replicas live on broker 2, then broker 2 stopped (controlled shutdown).
# The diagnosis shows what an operator would see, as incidents (findings grouped by root cause):
# broker 2 down with every partition it left or took offline, and the never-safe RF-1 topic;
# `--members` lists the findings behind each (offline, under-replicated, under / at min ISR, ...).
# Exit status is 0 whatever the diagnosis says (it is expected to be critical here).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH"

work=$(mktemp -d "${TMPDIR:-/tmp}/kafka-health-demo.XXXXXX")
history="$work/history"
report="$work/diagnosis.html"
topic=demo-fragile

restore() {
  echo
  echo "== restoring the cluster"
  kafka-health testbed broker start 2 >/dev/null || true
  kafka-health testbed tool kafka-topics --delete --if-exists --topic "$topic" >/dev/null 2>&1 || true
  # Leadership stays where the failover put it (Kafka's auto rebalance is off): move it back.
  kafka-health testbed tool kafka-leader-election --election-type PREFERRED --all-topic-partitions \
    >/dev/null 2>&1 || true
  echo "done; the report stays in $report"
}

bootstrap=$(kafka-health testbed up)
echo "== diagnosing the healthy cluster first (this also starts a history in $history)"
kafka-health diagnose --bootstrap-servers "$bootstrap" --history "$history" || true

trap restore EXIT
echo
echo "== injecting faults: topic $topic with both replicas on broker 2, then broker 2 stopped"
kafka-health testbed tool kafka-topics --create --if-not-exists --topic "$topic" \
  --replica-assignment 2,2 >/dev/null
kafka-health testbed broker stop 2
sleep 3  # let the controller move leaderships and shrink the ISRs

echo
echo "== diagnosis of the broken cluster (exit code: 0 healthy, 1 warnings, 4 critical)"
rc=0
kafka-health diagnose --bootstrap-servers "$bootstrap" --history "$history" \
  --save-snapshot "$work/snapshot.json" || rc=$?
echo "(kafka-health diagnose exited with $rc)"
echo
echo "== the same snapshot as an HTML report with plots"
kafka-health diagnose --snapshot "$work/snapshot.json" --history "$history" --no-record \
  --output html --out "$report" || true
