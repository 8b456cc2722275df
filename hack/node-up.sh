#!/usr/bin/env bash
# Starts a real single-node Kubernetes cluster on this host, where pods actually run:
#   etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and kube-proxy built by
#   hack/build-k8s.sh node; Debian's containerd, runc and CNI plugins (hack/install-node-deps.sh);
#   a PKI made with openssl; a bridge pod network; kube-proxy in iptables mode; the sandbox image
#   packed from hack/tools/pause with hack/tools/mkimage. No container engine, no registry.
#
# Everything lives under node/ (git-ignored): pki/, the containerd image store, etcd data, kubelet
# state, and logs/ (one log per component; the previous run's logs move to logs/previous/).
# The admin kubeconfig is node/kubeconfig. Stop with hack/node-down.sh.
#
# Idempotent: when the cluster is already up and healthy this is a no-op; when it is partly up
# (a component died), it is torn down and started again.
#
# DNS: the cluster runs no CoreDNS. Pods reach the API server through the KUBERNETES_SERVICE_HOST
# and _PORT variables the kubelet injects (the service IP, routed by kube-proxy), which is all the
# manager and the engine Jobs need; pods resolve external names with the host's resolv.conf.
#
# Environment: NODE_DIR (default <repo>/node), K8S_BIN (default bin/k8s/<pinned version>),
# NODE_NAME (default: the lower-cased host name), NODE_IP (default: the source address of the
# default route), READY_TIMEOUT seconds (default 180).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
K8S_VERSION=$(awk '/^require k8s.io\/kubernetes /{print $3}' "$ROOT/hack/tools/kube/go.mod")
K8S_BIN=${K8S_BIN:-$ROOT/bin/k8s/$K8S_VERSION}
TOOLS_BIN=${TOOLS_BIN:-$ROOT/bin}
N=${NODE_DIR:-$ROOT/node}
P=$N/pki
L=$N/logs
READY_TIMEOUT=${READY_TIMEOUT:-180}
SERVICE_CIDR=10.96.0.0/16
SERVICE_IP=10.96.0.1
POD_CIDR=10.244.0.0/24
PAUSE_IMAGE=localhost/blis/pause:1.0
COMPONENTS=(containerd etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy)

export PATH=$K8S_BIN:$TOOLS_BIN:$PATH
export KUBECONFIG=$N/kubeconfig CONTAINERD_ADDRESS=$N/containerd.sock CONTAINERD_NAMESPACE=k8s.io

t0=$SECONDS
log() { echo "node-up [$((SECONDS - t0))s] $*"; }
die() { echo "node-up: $*" >&2; exit 1; }

# ---- preconditions
[ "$(id -u)" -eq 0 ] || die "must run as root (kubelet, containerd and CNI need it)"
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl; do
  [ -x "$K8S_BIN/$b" ] || die "$K8S_BIN/$b is missing; run 'make node-binaries'"
done
for b in containerd containerd-shim-runc-v2 runc ctr iptables iptables-save iptables-restore conntrack openssl ip; do
  command -v "$b" >/dev/null || die "$b is missing; run hack/install-node-deps.sh"
done
[ -x /usr/lib/cni/bridge ] || die "CNI plugins are missing; run hack/install-node-deps.sh"

NODE_NAME=${NODE_NAME:-$(hostname | tr '[:upper:]' '[:lower:]')}
if [ -z "${NODE_IP:-}" ]; then
  NODE_IP=$(ip -4 route get 1.1.1.1 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "src") {print $(i + 1); exit}}')
  [ -n "$NODE_IP" ] || NODE_IP=$(ip -4 -o addr show scope global | awk '{split($4, a, "/"); print a[1]; exit}')
fi
[ -n "$NODE_IP" ] || die "cannot find this host's IPv4 address; set NODE_IP"

# pid_alive NAME: the component recorded in NAME.pid is still that process.
pid_alive() {
  local f=$N/$1.pid pid
  [ -f "$f" ] || return 1
  pid=$(cat "$f")
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$1"
}

healthy() {
  local c
  for c in "${COMPONENTS[@]}"; do pid_alive "$c" || return 1; done
  kubectl get --raw /readyz >/dev/null 2>&1 &&
    [ "$(kubectl get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

# ---- already up?
if healthy; then
  log "cluster already up (node $NODE_NAME Ready); KUBECONFIG=$KUBECONFIG"
  exit 0
fi
for c in "${COMPONENTS[@]}"; do
  if [ -f "$N/$c.pid" ]; then
    log "cluster partly up; tearing it down first"
    "$ROOT/hack/node-down.sh"
    break
  fi
done

# ---- ports must be free (another cluster or an envtest on fixed ports would collide)
for port in 2379 2380 6443 10248 10249 10250 10256 10257 10259; do
  if ss -Hltn "sport = :$port" | grep -q .; then
    die "port $port is in use: $(ss -Hltnp "sport = :$port" | head -1)"
  fi
done

mkdir -p "$N" "$L" "$P" "$N/images" "$N/cni/net.d" "$N/cni/data" "$N/kubelet" "$N/pod-logs"
if compgen -G "$L/*.log" >/dev/null; then
  rm -rf "$L/previous" && mkdir -p "$L/previous" && mv "$L"/*.log "$L/previous/"
fi

# start NAME CMD...: runs a component detached in its own session, logging to logs/NAME.log.
start() {
  local name=$1
  shift
  setsid "$@" >"$L/$name.log" 2>&1 </dev/null &
  echo $! >"$N/$name.pid"
}

# wait_for WHAT SECONDS CMD...: polls CMD every half second until it succeeds.
wait_for() {
  local what=$1 secs=$2 i
  shift 2
  for ((i = 0; i < secs * 2; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  die "timed out after ${secs}s waiting for $what (logs: $L)"
}

# ---- host sysctls the kubelet, kube-proxy and CNI change; hack/node-down.sh restores them
SYSCTLS=(kernel.panic kernel.panic_on_oops vm.overcommit_memory vm.panic_on_oom net.ipv4.ip_forward
  net.ipv4.conf.all.route_localnet net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables)
[ -f "$N/sysctl.orig" ] || sysctl -e "${SYSCTLS[@]}" 2>/dev/null | sed 's/ = /=/' >"$N/sysctl.orig"
sysctl -q -w net.ipv4.ip_forward=1
# Service traffic between pods on the same bridge must traverse iptables (kube-proxy's DNAT).
sysctl -q -e -w net.bridge.bridge-nf-call-iptables=1 2>/dev/null || true

# ---- PKI: a CA, serving certificates, and one client certificate per component
make_pki() {
  rm -rf "$P" && mkdir -p "$P"
  (
    cd "$P"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 365 -subj "/CN=blis-node-ca" 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    # cert NAME SUBJECT [SANS]: a CA-signed certificate; with SANS it also serves TLS.
    cert() {
      local usage=clientAuth
      openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
      {
        if [ -n "${3:-}" ]; then
          echo "subjectAltName=$3"
          usage=serverAuth,clientAuth
        fi
        echo "extendedKeyUsage=$usage"
        echo "keyUsage=critical,digitalSignature,keyEncipherment"
      } >"$1.ext"
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
      rm -f "$1.csr" "$1.ext"
    }
    cert apiserver "/CN=kube-apiserver" "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,IP:127.0.0.1,IP:$SERVICE_IP,IP:$NODE_IP"
    cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
    cert kubelet-serving "/CN=$NODE_NAME" "DNS:$NODE_NAME,DNS:localhost,IP:127.0.0.1,IP:$NODE_IP"
    cert admin "/O=system:masters/CN=kubernetes-admin"
    cert kubelet "/O=system:nodes/CN=system:node:$NODE_NAME"
    cert kube-controller-manager "/CN=system:kube-controller-manager"
    cert kube-scheduler "/CN=system:kube-scheduler"
    cert kube-proxy "/CN=system:kube-proxy"
  )
  local u
  for u in admin kubelet kube-controller-manager kube-scheduler kube-proxy; do
    local kc=$P/$u.kubeconfig
    kubectl --kubeconfig="$kc" config set-cluster local --server="https://$NODE_IP:6443" --certificate-authority="$P/ca.crt" --embed-certs >/dev/null
    kubectl --kubeconfig="$kc" config set-credentials "$u" --client-certificate="$P/$u.crt" --client-key="$P/$u.key" --embed-certs >/dev/null
    kubectl --kubeconfig="$kc" config set-context local --cluster=local --user="$u" >/dev/null
    kubectl --kubeconfig="$kc" config use-context local >/dev/null
  done
  echo "$NODE_NAME $NODE_IP" >"$P/identity"
}
# Regenerate when missing, made for another host name or address, or expiring within a day.
if [ ! -f "$P/admin.kubeconfig" ] || [ "$(cat "$P/identity" 2>/dev/null)" != "$NODE_NAME $NODE_IP" ] ||
  ! openssl x509 -checkend 86400 -noout -in "$P/apiserver.crt" >/dev/null 2>&1; then
  log "creating the PKI for $NODE_NAME ($NODE_IP)"
  make_pki
fi
cp "$P/admin.kubeconfig" "$KUBECONFIG"

# ---- containerd: CRI, cgroupfs, CNI from /usr/lib/cni, all state under node/
cat >"$N/containerd.toml" <<EOF
version = 2
root = "$N/containerd/root"
state = "$N/containerd/state"
# Plugins the test node never uses.
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "$N/containerd.sock"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # This VM lacks CAP_SYS_RESOURCE: without this, runc fails every sandbox while lowering
  # oom_score_adj ("can't get final child's PID from pipe").
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$N/cni/net.d"
EOF
cat >"$N/cni/net.d/10-podnet.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "podnet",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": "$N/cni/data", "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
EOF
log "starting containerd"
start containerd containerd --config "$N/containerd.toml"
wait_for containerd 30 ctr version

# ---- sandbox image: the pause binary packed without a registry
build_tool() { # build_tool NAME: hack/tools/NAME -> bin/NAME, when missing or older than its source
  local out=$TOOLS_BIN/$1 src=$ROOT/hack/tools/$1
  if [ ! -x "$out" ] || [ -n "$(find "$src" -name '*.go' -newer "$out" -print -quit)" ]; then
    log "building $1"
    mkdir -p "$TOOLS_BIN"
    (cd "$src" && CGO_ENABLED=0 GOTOOLCHAIN=local go build -trimpath -ldflags="-s -w" -o "$out" .)
  fi
}
if ! ctr images ls -q "name==$PAUSE_IMAGE" | grep -q .; then
  build_tool mkimage
  build_tool pause
  mkimage -out "$N/images/pause.tar" -tag "$PAUSE_IMAGE" -file "$TOOLS_BIN/pause:/pause" \
    -user 65535:65535 -entrypoint /pause -passwd=false >/dev/null
  ctr images import "$N/images/pause.tar" >/dev/null
  log "imported $PAUSE_IMAGE"
fi

# ---- control plane
log "starting etcd and kube-apiserver"
start etcd etcd --name "$NODE_NAME" --data-dir "$N/etcd-data" \
  --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
  --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
  --initial-cluster "$NODE_NAME=http://127.0.0.1:2380" --unsafe-no-fsync --log-level warn
start kube-apiserver kube-apiserver --etcd-servers=http://127.0.0.1:2379 \
  --advertise-address="$NODE_IP" --bind-address=0.0.0.0 --secure-port=6443 \
  --service-cluster-ip-range=$SERVICE_CIDR --allow-privileged=true \
  --client-ca-file="$P/ca.crt" --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" \
  --service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --kubelet-client-certificate="$P/apiserver-kubelet-client.crt" --kubelet-client-key="$P/apiserver-kubelet-client.key" \
  --kubelet-certificate-authority="$P/ca.crt" --kubelet-preferred-address-types=InternalIP \
  --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction --profiling=false
wait_for "the API server" 120 kubectl get --raw /readyz
log "API server ready"
# kube-proxy authenticates as system:kube-proxy; bind it to the built-in node-proxier role.
kubectl create clusterrolebinding blis-node:kube-proxy --clusterrole=system:node-proxier --user=system:kube-proxy \
  --dry-run=client -o yaml | kubectl apply -f - >/dev/null

start kube-controller-manager kube-controller-manager --kubeconfig="$P/kube-controller-manager.kubeconfig" \
  --authentication-kubeconfig="$P/kube-controller-manager.kubeconfig" --authorization-kubeconfig="$P/kube-controller-manager.kubeconfig" \
  --service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" \
  --cluster-signing-cert-file="$P/ca.crt" --cluster-signing-key-file="$P/ca.key" \
  --use-service-account-credentials=true --leader-elect=false \
  --service-cluster-ip-range=$SERVICE_CIDR --bind-address=127.0.0.1 --profiling=false
start kube-scheduler kube-scheduler --kubeconfig="$P/kube-scheduler.kubeconfig" \
  --authentication-kubeconfig="$P/kube-scheduler.kubeconfig" --authorization-kubeconfig="$P/kube-scheduler.kubeconfig" \
  --leader-elect=false --bind-address=127.0.0.1 --profiling=false

# ---- the node: kubelet and kube-proxy
cat >"$N/kubelet-config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# cgroup v1 (hybrid) host without systemd: cgroupfs. Kubernetes 1.35+ refuses cgroup v1 by default.
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$N/containerd.sock
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $P/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $P/kubelet-serving.crt
tlsPrivateKeyFile: $P/kubelet-serving.key
healthzBindAddress: 127.0.0.1
readOnlyPort: 0
failSwapOn: false
podLogsDir: $N/pod-logs
resolvConf: /etc/resolv.conf
podCIDR: $POD_CIDR
maxPods: 60
# A small test VM: evict only when really short, and never garbage-collect the imported images
# (they cannot be pulled back).
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
EOF
cat >"$N/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $P/kube-proxy.kubeconfig}
hostnameOverride: $NODE_NAME
mode: iptables
clusterCIDR: 10.244.0.0/16
nodePortAddresses: [primary]
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
# Leave the host's conntrack limits and timeouts alone.
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
log "starting kubelet and kube-proxy"
start kubelet kubelet --config="$N/kubelet-config.yaml" --kubeconfig="$P/kubelet.kubeconfig" \
  --root-dir="$N/kubelet" --hostname-override="$NODE_NAME" --node-ip="$NODE_IP"
start kube-proxy kube-proxy --config="$N/kube-proxy.yaml"

wait_for "node $NODE_NAME to register" 120 kubectl get node "$NODE_NAME"
kubectl wait --for=condition=Ready "node/$NODE_NAME" --timeout="${READY_TIMEOUT}s" >/dev/null ||
  die "node $NODE_NAME not Ready (logs: $L)"
# Workloads need their namespace's default ServiceAccount and root CA bundle.
wait_for "the default ServiceAccount" 60 kubectl -n default get serviceaccount default
wait_for "the kube-root-ca.crt ConfigMap" 60 kubectl -n default get configmap kube-root-ca.crt

for c in "${COMPONENTS[@]}"; do pid_alive "$c" || die "$c exited (log: $L/$c.log)"; done
cat >"$N/env" <<EOF
export KUBECONFIG=$KUBECONFIG
export CONTAINERD_ADDRESS=$CONTAINERD_ADDRESS
export CONTAINERD_NAMESPACE=k8s.io
export PATH=$K8S_BIN:\$PATH
EOF
log "node $NODE_NAME Ready (Kubernetes $K8S_VERSION, API https://$NODE_IP:6443)"
log "use it with: source $N/env"
