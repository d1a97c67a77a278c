#!/usr/bin/env bash
# Obtain helm at one pinned v3 release and print the path of the binary. The LAST LINE of stdout
# is that path; every message goes to stderr. Sources, in order:
#   1. $KAFKA_HEALTH_HELM, when it is an executable (used as is, whatever its version);
#   2. the cache <cache>/helm/<version>/bin/helm, built from the Go module proxy on first use;
# where <cache> = ${XDG_CACHE_HOME:-~/.cache}/kafka-health.
# A helm on PATH is deliberately NOT used: it may be helm 4 or another 3.x, and the chart tests
# (`helm lint --strict`, `helm template`) should behave the same on every machine.
# A warm run spawns no go command and returns in milliseconds.
#
# The build uses only the Go module proxy (GOPROXY, default proxy.golang.org) and the checksum
# database: no GitHub, no get.helm.sh. A scratch module requires helm.sh/helm/v3@<version> and
# builds its cmd/helm with the ldflags helm's own Makefile sets (version, and the Kubernetes
# version `helm lint`/`helm template` assume, derived from the k8s.io/client-go it requires).
# A cold build took about 4 minutes on 2 busy cores (about 0.3 GB into GOMODCACHE); GOMODCACHE
# and GOCACHE stay at Go's defaults, so a rebuild reuses them.
#
# Environment:
#   KAFKA_HEALTH_HELM_VERSION  default v3.22.0 (newest helm v3 on the proxy, 2026-09)
#   KAFKA_HEALTH_HELM          use this helm binary instead (no build)
#   XDG_CACHE_HOME             cache root (default ~/.cache)
set -euo pipefail

HELM_VERSION="${KAFKA_HEALTH_HELM_VERSION:-v3.22.0}"
ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/kafka-health/helm"
STAMP="helm=$HELM_VERSION"

log() { echo "helm.sh: $*" >&2; }
die() { echo "helm.sh: ERROR: $*" >&2; exit 1; }

case "$HELM_VERSION" in v3.*.*) ;; *) die "KAFKA_HEALTH_HELM_VERSION must look like v3.22.0 (got '$HELM_VERSION'); this script builds helm 3 only";; esac

# 1. explicit binary
if [ -n "${KAFKA_HEALTH_HELM:-}" ]; then
  [ -x "$KAFKA_HEALTH_HELM" ] || die "KAFKA_HEALTH_HELM=$KAFKA_HEALTH_HELM is not an executable"
  log "using KAFKA_HEALTH_HELM=$KAFKA_HEALTH_HELM"
  echo "$KAFKA_HEALTH_HELM"
  exit 0
fi

# 2. cache (warm path: no subprocess beyond the shell builtins)
DEST="$ROOT/$HELM_VERSION"
if [ -x "$DEST/bin/helm" ] && [ -f "$DEST/stamp" ] && [ "$(<"$DEST/stamp")" = "$STAMP" ]; then
  echo "$DEST/bin/helm"
  exit 0
fi

# ---- cold path: build ----
command -v go >/dev/null 2>&1 || die "go not found on PATH: a Go toolchain >= 1.26 (helm $HELM_VERSION declares go 1.26.0) is needed to build helm from the Go module proxy (or set KAFKA_HEALTH_HELM to a helm binary)"
mkdir -p "$ROOT"

# One builder at a time; a second caller waits, then finds the finished cache.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$ROOT/.lock"
  if ! flock -n 9; then
    log "another build holds $ROOT/.lock; waiting for it"
    flock 9
  fi
  if [ -x "$DEST/bin/helm" ] && [ -f "$DEST/stamp" ] && [ "$(<"$DEST/stamp")" = "$STAMP" ]; then
    echo "$DEST/bin/helm"
    exit 0
  fi
  # We hold the lock, so any leftover temp dir is from an interrupted build.
  rm -rf "$ROOT"/.tmp.* "$ROOT"/.old.* 2>/dev/null || true
fi

export GOTOOLCHAIN=local GOWORK=off GO111MODULE=on CGO_ENABLED=0
GOOS=$(go env GOHOSTOS) GOARCH=$(go env GOHOSTARCH)
export GOOS GOARCH
GOVER=$(go env GOVERSION)
log "building $STAMP with $GOVER (GOPROXY=$(go env GOPROXY)); a cold build takes a few minutes on 2 cores"

TMP=$(mktemp -d "$ROOT/.tmp.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/bin" "$TMP/src"
start=$SECONDS

# go mod download -json <mod@ver>: prints the JSON, or dies naming the module and proxy.
download() {
  local out
  if ! out=$(cd "$TMP" && go mod download -json "$1" 2>&1) || grep -q '"Error"' <<<"$out"; then
    log "$out"
    die "cannot download $1 from the Go module proxy (GOPROXY=$(go env GOPROXY)): is the proxy reachable and does that version exist?"
  fi
  printf '%s\n' "$out"
}
json_field() { # name -> first string value of "name" in the JSON on stdin
  sed -n "s/^[[:space:]]*\"$1\": \"\\(.*\\)\",\\{0,1\\}\$/\\1/p" | head -n1
}

log "fetching helm.sh/helm/v3@$HELM_VERSION"
hjson=$(download "helm.sh/helm/v3@$HELM_VERSION")
hgomod=$(json_field GoMod <<<"$hjson")
[ -f "$hgomod" ] || die "go mod download gave no go.mod for helm.sh/helm/v3@$HELM_VERSION"
hcommit=$(json_field Hash <<<"$hjson")
hgo=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$hgomod")
# helm's Makefile: k8s version = client-go v0.<minor> -> 1.<minor>.
clientgo=$(sed -n 's#^[[:space:]]*k8s\.io/client-go[[:space:]]\{1,\}v0\.\([0-9]*\)\..*#\1#p' "$hgomod" | head -n1)
[ -n "$clientgo" ] || die "cannot find k8s.io/client-go in $hgomod"
if grep -qE '^[[:space:]]*replace|=>' "$hgomod"; then
  # Replace directives of a dependency are ignored; a release that relies on them would build differently.
  die "helm.sh/helm/v3@$HELM_VERSION has replace directives in its go.mod; this script cannot reproduce them"
fi
cat >"$TMP/src/go.mod" <<EOF
module kafkahealth.local/helmbuild

go ${hgo:-1.26.0}

require helm.sh/helm/v3 $HELM_VERSION
EOF

ldflags="-s -w"
ldflags+=" -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
[ -z "$hcommit" ] || ldflags+=" -X helm.sh/helm/v3/internal/version.gitCommit=$hcommit"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$clientgo"
done
log "go build helm.sh/helm/v3/cmd/helm (Kubernetes 1.$clientgo capabilities)"
(cd "$TMP/src" && go build -mod=mod -p 2 -trimpath -ldflags="$ldflags" -o "$TMP/bin/helm" \
  helm.sh/helm/v3/cmd/helm) \
  || die "building helm $HELM_VERSION failed (see the go error above; GOPROXY=$(go env GOPROXY))"

# ---- verify ----
got=$("$TMP/bin/helm" version --template '{{.Version}}' 2>/dev/null) || die "built helm does not run"
[ "$got" = "$HELM_VERSION" ] || die "built helm reports version '$got', expected $HELM_VERSION"
log "build took $((SECONDS - start))s; helm $got, $(( $(stat -c %s "$TMP/bin/helm") / 1048576 )) MiB"

# ---- publish atomically ----
builddate=$(date -u +%Y-%m-%dT%H:%M:%SZ)
printf '%s\n' "$STAMP" >"$TMP/stamp"
printf 'built %s with %s in %ss\n' "$builddate" "$GOVER" "$((SECONDS - start))" >"$TMP/build-info"
rm -rf "$TMP/src"
chmod 755 "$TMP"
if [ -e "$DEST" ]; then   # a stale cache: move it aside, then swap in
  mv -T "$DEST" "$(mktemp -u "$ROOT/.old.XXXXXX")"
fi
mv -T "$TMP" "$DEST"
trap - EXIT
rm -rf "$ROOT"/.old.* 2>/dev/null || true
log "cached in $DEST/bin"
echo "$DEST/bin/helm"
