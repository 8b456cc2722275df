#!/usr/bin/env bash
# Installs Debian's headless-capable Chromium (package chromium), which the browser test of the
# HTML reports (make test-browser) drives, only when it is missing. Needs root the first time.
# Safe to run repeatedly.
set -euo pipefail

if command -v chromium >/dev/null 2>&1; then
  echo "chromium already installed: $(chromium --version 2>/dev/null || echo unknown version)"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "chromium is missing; run this script as root (or apt-get install chromium)" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# Refresh the package lists only when they are absent or older than a day.
if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mtime -1 -print -quit 2>/dev/null)" ]; then
  apt-get update -qq
fi
apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null
echo "installed: $(chromium --version)"
