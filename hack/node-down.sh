#!/usr/bin/env bash
# Stops the single-node cluster started by hack/node-up.sh and cleans the host up, whatever state
# the cluster is in: pods are deleted while the kubelet still runs (so CNI and volumes are torn down
# properly), the components are stopped by their recorded PIDs, then leftover containers, mounts,
# network namespaces, the cni0 bridge, kubepods cgroups, the iptables chains of kube-proxy, the
# kubelet and the bridge plugin are removed, and the host sysctls node-up saved are restored.
#
# The cluster's state (etcd data, kubelet and pod directories) is wiped so the next node-up starts
# a fresh cluster; the PKI, the containerd image store (imported images) and node/logs/ are kept.
#   KEEP_STATE=1  keep the etcd data as well (the next node-up resumes the same cluster)
#   PURGE=1       remove node/ entirely except logs/ (PKI and images are made again next time)
# Always exits 0 once cleanup has been attempted; problems are reported as warnings.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
K8S_VERSION=$(awk '/^require k8s.io\/kubernetes /{print $3}' "$ROOT/hack/tools/kube/go.mod")
K8S_BIN=${K8S_BIN:-$ROOT/bin/k8s/$K8S_VERSION}
N=${NODE_DIR:-$ROOT/node}
export PATH=$K8S_BIN:$PATH
export KUBECONFIG=$N/kubeconfig CONTAINERD_ADDRESS=$N/containerd.sock CONTAINERD_NAMESPACE=k8s.io

t0=$SECONDS
log() { echo "node-down [$((SECONDS - t0))s] $*"; }
warn() { echo "node-down: warning: $*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
  echo "node-down: must run as root" >&2
  exit 1
fi
if [ ! -d "$N" ]; then
  log "nothing to do ($N does not exist)"
  exit 0
fi

# pid_of NAME: the PID recorded for component NAME, if that process still runs that component.
pid_of() {
  local f=$N/$1.pid pid
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$1" && echo "$pid"
}

# stop NAME...: SIGTERM to every named component at once, SIGKILL to any still running after
# $STOP_GRACE seconds (default 15); forgets their PID files.
stop() {
  local name pid i alive
  local -A pids=()
  for name in "$@"; do
    if pid=$(pid_of "$name"); then
      kill "$pid" 2>/dev/null
      pids[$name]=$pid
    fi
    rm -f "$N/$name.pid"
  done
  for ((i = 0; i < ${STOP_GRACE:-15} * 5; i++)); do
    alive=0
    for pid in "${pids[@]}"; do [ -d "/proc/$pid" ] && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.2
  done
  for name in "${!pids[@]}"; do
    pid=${pids[$name]}
    if [ -d "/proc/$pid" ]; then
      warn "$name ($pid) ignored SIGTERM; killing it"
      kill -9 "$pid" 2>/dev/null
    fi
    log "stopped $name ($pid)"
  done
}

ctr_up() { pid_of containerd >/dev/null && ctr version >/dev/null 2>&1; }
sandboxes() { ctr tasks ls -q 2>/dev/null | grep -c . ; }

# ---- 1. let the kubelet tear the pods down (CNI DEL, volume unmounts) while everything runs
if pid_of kubelet >/dev/null && kubectl get --raw /readyz >/dev/null 2>&1; then
  log "deleting workloads and pods"
  kubectl delete deployments,replicasets,statefulsets,daemonsets,jobs,cronjobs --all --all-namespaces \
    --wait=false >/dev/null 2>&1
  kubectl delete pods --all --all-namespaces --grace-period=2 --wait=false >/dev/null 2>&1
  if ctr_up; then
    for ((i = 0; i < 60; i++)); do
      [ "$(sandboxes)" -eq 0 ] && break
      sleep 1
    done
    [ "$(sandboxes)" -eq 0 ] || warn "$(sandboxes) containers still running after 60s; killing them"
  fi
fi

# ---- 2. components: the node and the controllers, then the API server, then etcd
stop kube-proxy kubelet kube-scheduler kube-controller-manager
stop kube-apiserver
stop etcd

# ---- 3. leftover containers, then containerd (shims exit with their tasks)
if ctr_up; then
  for t in $(ctr tasks ls -q 2>/dev/null); do ctr tasks kill -s SIGKILL "$t" >/dev/null 2>&1; done
  for ((i = 0; i < 25; i++)); do
    [ -z "$(ctr tasks ls -q 2>/dev/null | head -1)" ] && break
    for t in $(ctr tasks ls -q 2>/dev/null); do ctr tasks rm -f "$t" >/dev/null 2>&1; done
    sleep 0.2
  done
  for c in $(ctr containers ls -q 2>/dev/null); do ctr containers rm "$c" >/dev/null 2>&1; done
fi
stop containerd
# Shims of this containerd that outlived it (matched by this node's socket path, never by name).
for p in $(pgrep -f "containerd-shim-runc-v2 .*-address $N/containerd.sock" 2>/dev/null); do
  kill -9 "$p" 2>/dev/null && warn "killed leftover shim $p"
done

# ---- 4. mounts, network namespaces, bridge, cgroups
awk -v n="$N/" 'index($2, n) == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do
  umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || warn "cannot unmount $m"
done
for ns in /var/run/netns/cni-*; do
  [ -e "$ns" ] || continue
  umount "$ns" 2>/dev/null
  rm -f "$ns"
done
ip link del cni0 2>/dev/null && log "removed bridge cni0"
for d in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/unified/kubepods /sys/fs/cgroup/kubepods; do
  [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
  [ -d "$d" ] && warn "cgroup $d could not be removed"
done

# ---- 5. iptables: kube-proxy's own cleanup, then any chain of kube-proxy, the kubelet (KUBE-*)
# or the bridge/portmap plugins (CNI-*), with every rule that refers to one.
kube-proxy --cleanup >/dev/null 2>&1
for v in iptables ip6tables; do
  command -v "$v-save" >/dev/null || continue
  if "$v-save" 2>/dev/null | grep -qE 'KUBE-|CNI-'; then
    if "$v-save" | grep -vE 'KUBE-|CNI-' | "$v-restore"; then
      log "removed Kubernetes and CNI $v rules"
    else
      warn "$v-restore failed; $v rules of the cluster may remain"
    fi
  fi
done
conntrack -D -s 10.244.0.0/16 >/dev/null 2>&1

# ---- 6. containerd runtime leftovers (only when no other containerd uses /run/containerd)
if [ ! -S /run/containerd/containerd.sock ]; then
  rm -rf /run/containerd/runc/k8s.io /run/containerd/io.containerd.runtime.v2.task/k8s.io 2>/dev/null
  rmdir /run/containerd/runc /run/containerd/io.containerd.runtime.v2.task /run/containerd/s /run/containerd 2>/dev/null
fi
rm -rf /var/lib/cni/results 2>/dev/null
rmdir /var/lib/cni /var/run/netns 2>/dev/null

# ---- 7. host sysctls
if [ -f "$N/sysctl.orig" ]; then
  while IFS= read -r kv; do
    [ -n "$kv" ] && { sysctl -q -w "$kv" >/dev/null 2>&1 || warn "cannot restore $kv"; }
  done <"$N/sysctl.orig"
  rm -f "$N/sysctl.orig"
  log "restored host sysctls"
fi

# ---- 8. state
if awk -v n="$N/" 'index($2, n) == 1 {found = 1} END {exit !found}' /proc/mounts; then
  warn "mounts remain under $N; leaving its state in place"
elif [ "${PURGE:-0}" = 1 ]; then
  find "$N" -mindepth 1 -maxdepth 1 ! -name logs -exec rm -rf {} +
  log "purged $N (logs kept)"
else
  rm -rf "$N/kubelet" "$N/pod-logs" "$N/cni/data" "$N/containerd/state" "$N/containerd.sock" \
    "$N/containerd.sock.ttrpc" "$N/env" "$N/kubeconfig"
  [ "${KEEP_STATE:-0}" = 1 ] || rm -rf "$N/etcd-data"
fi
log "down (logs in $N/logs)"
exit 0
