#!/usr/bin/env bash
# End-to-end smoke test on kind: build the operator image, load it into a kind cluster, install
# the Helm chart and a single-node Apache Kafka (KRaft) in the cluster, apply an observe-only
# policy, and check that the operator diagnoses the cluster and reports it (status conditions,
# Events, metrics, the Argo CD health check on the live object).
#
# NEEDS DOCKER (kind runs Kubernetes nodes as containers). It is meant for users' CI
# (.github/workflows/kind-e2e.yaml) and workstations; the project's own test machines have no
# Docker engine and run the same checks against a local etcd + kube-apiserver instead
# (tests/ship, tests/k8s).
#
# Usage: hack/kind/e2e.sh [all|up|image|install|smoke|collect|down]   (default: all = up image
#        install smoke collect; the cluster is kept: `down` deletes it)
#
# Needs: docker, kubectl, go (to build helm via hack/helm.sh and kind if missing), python3.
# Environment:
#   KIND_CLUSTER_NAME   default kafka-health-e2e
#   KIND_VERSION        kind to `go install` when kind is not on PATH (default v0.33.0)
#   IMAGE               operator image to build and load (default kafka-health-operator:e2e)
#   KAFKA_IMAGE         default apache/kafka:4.4.0 (the testbed's Kafka version)
#   ARTIFACTS           where logs and the live objects go (default ./reports/kind-e2e)
#   SMOKE_TIMEOUT       seconds to wait for the first diagnosis (default 300)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD

CLUSTER="${KIND_CLUSTER_NAME:-kafka-health-e2e}"
KIND_VERSION="${KIND_VERSION:-v0.33.0}"
IMAGE="${IMAGE:-kafka-health-operator:e2e}"
KAFKA_IMAGE="${KAFKA_IMAGE:-apache/kafka:4.4.0}"
ARTIFACTS="${ARTIFACTS:-$ROOT/reports/kind-e2e}"
SMOKE_TIMEOUT="${SMOKE_TIMEOUT:-300}"
RELEASE=khp
OPERATOR_NS=kafka-health
KAFKA_NS=kafka
CONTEXT="kind-$CLUSTER"

log() { echo "e2e: $*" >&2; }
die() { echo "e2e: ERROR: $*" >&2; exit 1; }
k() { kubectl --context "$CONTEXT" "$@"; }

need() {
  command -v docker >/dev/null 2>&1 || die "docker not found: kind runs its nodes as Docker containers (this test cannot run without a Docker engine)"
  docker info >/dev/null 2>&1 || die "docker is installed but no engine answers (is the daemon running, may this user use it?)"
  command -v kubectl >/dev/null 2>&1 || die "kubectl not found"
  command -v python3 >/dev/null 2>&1 || die "python3 not found"
  if command -v kind >/dev/null 2>&1; then
    KIND=$(command -v kind)
  else
    command -v go >/dev/null 2>&1 || die "kind not found, and no go to install it (go install sigs.k8s.io/kind@$KIND_VERSION)"
    log "installing kind $KIND_VERSION from the Go module proxy"
    GOBIN="${XDG_CACHE_HOME:-$HOME/.cache}/kafka-health/kind/$KIND_VERSION" go install "sigs.k8s.io/kind@$KIND_VERSION"
    KIND="${XDG_CACHE_HOME:-$HOME/.cache}/kafka-health/kind/$KIND_VERSION/kind"
  fi
  HELM=$(bash hack/helm.sh)
}

up() {
  if "$KIND" get clusters 2>/dev/null | grep -qx "$CLUSTER"; then
    log "kind cluster $CLUSTER exists; reusing it"
  else
    log "creating kind cluster $CLUSTER"
    "$KIND" create cluster --name "$CLUSTER" --config hack/kind/kind-config.yaml --wait 120s
  fi
  k get nodes -o wide
}

image() {
  log "building $IMAGE from ./Dockerfile"
  docker build -t "$IMAGE" .
  log "loading $IMAGE and $KAFKA_IMAGE into kind"
  docker image inspect "$KAFKA_IMAGE" >/dev/null 2>&1 || docker pull "$KAFKA_IMAGE"
  "$KIND" load docker-image --name "$CLUSTER" "$IMAGE" "$KAFKA_IMAGE"
}

install() {
  log "installing Kafka ($KAFKA_IMAGE) in namespace $KAFKA_NS"
  k create namespace "$KAFKA_NS" --dry-run=client -o yaml | k apply -f -
  sed "s#image: KAFKA_IMAGE .*#image: $KAFKA_IMAGE#" hack/kind/kafka.yaml | k apply -f -
  log "installing the chart (release $RELEASE in $OPERATOR_NS, watching $KAFKA_NS)"
  "$HELM" --kube-context "$CONTEXT" upgrade --install "$RELEASE" charts/kafka-health-operator \
    --namespace "$OPERATOR_NS" --create-namespace \
    -f hack/kind/values-e2e.yaml \
    --set "image.repository=${IMAGE%:*}" --set "image.tag=${IMAGE##*:}" \
    --wait --timeout 5m
  k -n "$KAFKA_NS" rollout status statefulset/kafka --timeout 5m
  k -n "$OPERATOR_NS" rollout status "deployment/$RELEASE-kafka-health-operator" --timeout 5m
}

smoke() {
  log "creating a topic with replication factor 1 (the durability check must notice it)"
  k -n "$KAFKA_NS" exec kafka-0 -- /opt/kafka/bin/kafka-topics.sh --bootstrap-server localhost:9092 \
    --create --if-not-exists --topic orders --partitions 3 --replication-factor 1
  log "applying the observe-only policy"
  k apply -f hack/kind/policy-smoke.yaml

  log "waiting up to ${SMOKE_TIMEOUT}s for the first diagnosis (Ready=True)"
  local deadline=$((SECONDS + SMOKE_TIMEOUT)) ready=""
  until [ "$ready" = "True" ]; do
    [ $SECONDS -lt $deadline ] || die "no Ready=True after ${SMOKE_TIMEOUT}s: $(k -n "$KAFKA_NS" get khp smoke -o jsonpath='{.status.conditions}')"
    sleep 5
    ready=$(k -n "$KAFKA_NS" get khp smoke -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null || true)
  done
  k -n "$KAFKA_NS" get khp smoke
  health=$(k -n "$KAFKA_NS" get khp smoke -o jsonpath='{.status.health}')
  total=$(k -n "$KAFKA_NS" get khp smoke -o jsonpath='{.status.lastDiagnosis.total}')
  degraded=$(k -n "$KAFKA_NS" get khp smoke -o jsonpath='{.status.conditions[?(@.type=="Degraded")].status}')
  log "health=$health findings=$total degraded=$degraded"
  case "$health" in Healthy|Warning) ;; *) die "expected health Healthy or Warning (RF 1 topic), got '$health'";; esac
  [ "$degraded" = "False" ] || die "the policy is Degraded: $(k -n "$KAFKA_NS" get khp smoke -o jsonpath='{.status.conditions}')"
  k -n "$KAFKA_NS" get khp smoke -o jsonpath='{range .status.topFindings[*]}{.severity}{"\t"}{.check}{"\t"}{.message}{"\n"}{end}' \
    | grep -q low_replication_factor || die "no low_replication_factor finding for the RF 1 topic 'orders'"

  log "Events about the policy"
  k -n "$KAFKA_NS" get events --field-selector involvedObject.kind=KafkaHealthPolicy,involvedObject.name=smoke

  log "metrics of the policy"
  local body
  body=$(scrape_metrics)
  grep -E "^kafka_health_last_success_timestamp_seconds\{namespace=\"$KAFKA_NS\",policy=\"smoke\"\}" <<<"$body" \
    || die "no kafka_health_last_success_timestamp_seconds series for kafka/smoke on /metrics"
  grep -E "^kafka_health_healthy\{namespace=\"$KAFKA_NS\",policy=\"smoke\"\}" <<<"$body" >/dev/null \
    || die "no kafka_health_healthy series for kafka/smoke"

  log "the pod runs with the chart's security context"
  k -n "$OPERATOR_NS" get pod -l app.kubernetes.io/instance="$RELEASE" \
    -o jsonpath='{.items[0].spec.containers[0].securityContext.readOnlyRootFilesystem}' | grep -qx true \
    || die "readOnlyRootFilesystem is not set"

  argo_health
  log "smoke test passed"
}

# /metrics of the operator, through a port-forward to its metrics Service.
scrape_metrics() {
  local port=18080 pf body=""
  k -n "$OPERATOR_NS" port-forward "svc/$RELEASE-kafka-health-operator-metrics" "$port:8080" >/dev/null 2>&1 &
  pf=$!
  for _ in $(seq 1 30); do
    body=$(python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$port/metrics', timeout=2).read().decode())" 2>/dev/null) && break
    sleep 1
  done
  kill "$pf" 2>/dev/null || true
  wait "$pf" 2>/dev/null || true
  printf '%s\n' "$body"
}

# The Argo CD health check (deploy/argocd/health.lua) on the live object, with a Lua 5.1 runtime
# (lupa). Skipped with a note when lupa is not installed (pip install lupa).
argo_health() {
  mkdir -p "$ARTIFACTS"
  k -n "$KAFKA_NS" get khp smoke -o json >"$ARTIFACTS/khp-smoke.json"
  python3 - "$ARTIFACTS/khp-smoke.json" deploy/argocd/health.lua <<'PY' || die "Argo CD health check failed on the live object"
import json, sys
try:
    from lupa import lua51
except ImportError:
    print("e2e: lupa not installed: Argo CD health check skipped", file=sys.stderr)
    sys.exit(0)
obj = json.load(open(sys.argv[1]))
lua = lua51.LuaRuntime()
def to_lua(v):
    if isinstance(v, dict):
        t = lua.table()
        for key, item in v.items():
            if item is not None:
                t[key] = to_lua(item)
        return t
    if isinstance(v, list):
        t = lua.table()
        for i, item in enumerate(v, 1):
            t[i] = to_lua(item)
        return t
    return v
lua.globals().obj = to_lua(obj)
hs = lua.execute(open(sys.argv[2]).read())
print(f"e2e: Argo CD health of kafka/smoke: {hs['status']}: {hs['message']}", file=sys.stderr)
sys.exit(0 if hs["status"] in ("Healthy", "Progressing") else 1)
PY
}

collect() {
  mkdir -p "$ARTIFACTS"
  log "collecting logs and objects into $ARTIFACTS"
  k -n "$KAFKA_NS" get khp -o yaml >"$ARTIFACTS/kafkahealthpolicies.yaml" 2>&1 || true
  k get events -A --sort-by=.lastTimestamp >"$ARTIFACTS/events.txt" 2>&1 || true
  k -n "$OPERATOR_NS" logs "deployment/$RELEASE-kafka-health-operator" --tail=-1 >"$ARTIFACTS/operator.log" 2>&1 || true
  k -n "$OPERATOR_NS" describe pods >"$ARTIFACTS/operator-pods.txt" 2>&1 || true
  k -n "$KAFKA_NS" logs statefulset/kafka --tail=500 >"$ARTIFACTS/kafka.log" 2>&1 || true
  k get kopfpeerings.kopf.dev -A -o yaml >"$ARTIFACTS/kopfpeerings.yaml" 2>&1 || true
}

down() {
  log "deleting kind cluster $CLUSTER"
  "$KIND" delete cluster --name "$CLUSTER"
}

step="${1:-all}"
need
case "$step" in
  all)
    up
    image
    install
    trap collect EXIT
    smoke
    ;;
  up | image | install | smoke | collect | down) "$step" ;;
  *) die "unknown step '$step' (all|up|image|install|smoke|collect|down)" ;;
esac
