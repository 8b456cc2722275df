#!/usr/bin/env bash
# Builds the Kubernetes test binaries from Go modules into bin/k8s/<version>/, once.
#
#   hack/build-k8s.sh envtest   etcd, kube-apiserver, kubectl (controller tests)
#   hack/build-k8s.sh node      the above + kubelet, kube-controller-manager, kube-scheduler,
#                               kube-proxy (the single-node cluster of test/e2e)
#
# The modules are pinned by hack/tools/{etcd,kube}/go.{mod,sum}: Kubernetes is not `go install`able
# (its go.mod replaces the k8s.io/* staging modules with local paths), so the tools module requires
# k8s.io/kubernetes and replaces every staging module with its published v0.Y.Z twin. Binaries that
# already exist are reused; delete bin/k8s to rebuild.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
K8S_VERSION=$(awk '/^require k8s.io\/kubernetes /{print $3}' "$ROOT/hack/tools/kube/go.mod")
ETCD_VERSION=$(awk '/go.etcd.io\/etcd\/server\/v3 /{print $NF; exit}' "$ROOT/hack/tools/etcd/go.mod")
OUT=${K8S_BIN_DIR:-$ROOT/bin/k8s/$K8S_VERSION}
mode=${1:-envtest}
case $mode in
  envtest) cmds=(kube-apiserver kubectl) ;;
  node) cmds=(kube-apiserver kubectl kubelet kube-controller-manager kube-scheduler kube-proxy) ;;
  *) echo "usage: $0 envtest|node" >&2; exit 2 ;;
esac
mkdir -p "$OUT"
export GOFLAGS=-mod=mod CGO_ENABLED=0 GOTOOLCHAIN=local

if [ ! -x "$OUT/etcd" ]; then
  echo ">> etcd $ETCD_VERSION"
  (cd "$ROOT/hack/tools/etcd" && go build -trimpath -ldflags "-s -w" -o "$OUT/etcd.tmp" go.etcd.io/etcd/server/v3)
  mv "$OUT/etcd.tmp" "$OUT/etcd"
fi

# Version stamps: kubectl version and the API server's /version report the real release.
minor=$(echo "$K8S_VERSION" | cut -d. -f2)
ldflags="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
done
for c in "${cmds[@]}"; do
  [ -x "$OUT/$c" ] && continue
  echo ">> $c $K8S_VERSION"
  (cd "$ROOT/hack/tools/kube" && go build -trimpath -tags providerless -ldflags "$ldflags" -o "$OUT/$c.tmp" "k8s.io/kubernetes/cmd/$c")
  mv "$OUT/$c.tmp" "$OUT/$c"
done
echo "$OUT"
