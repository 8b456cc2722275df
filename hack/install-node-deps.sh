#!/usr/bin/env bash
# Installs the Debian packages the single-node test cluster needs (hack/node-up.sh), only when one
# of them is missing: containerd (container runtime with CRI), runc, the CNI plugins (bridge,
# host-local, portmap, loopback under /usr/lib/cni), iptables and conntrack (kube-proxy), and
# openssl (the cluster's PKI). Needs root. Safe to run repeatedly.
set -euo pipefail

# package -> a file whose presence proves it is installed.
declare -A probe=(
  [containerd]=/usr/bin/containerd
  [runc]=/usr/sbin/runc
  [containernetworking-plugins]=/usr/lib/cni/bridge
  [iptables]=/usr/sbin/iptables
  [conntrack]=/usr/sbin/conntrack
  [openssl]=/usr/bin/openssl
  [iproute2]=/usr/sbin/ip
)

missing=()
for pkg in "${!probe[@]}"; do
  if [ ! -e "${probe[$pkg]}" ] && ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed"; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "node dependencies already installed"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "missing packages (${missing[*]}); run this script as root" >&2
  exit 1
fi

echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Refresh the package lists only when they are absent or older than a day.
if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mtime -1 -print -quit 2>/dev/null)" ]; then
  apt-get update -qq
fi
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The Debian package enables a containerd service; the test cluster runs its own containerd with
# its own config and socket, so a system one is neither needed nor started here.
echo "installed: ${missing[*]}"
