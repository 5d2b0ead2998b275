#!/usr/bin/env bash
# Installs the Debian packages hloscope builds, tests and runs with.
# Safe to run again: apt skips what is already installed.
set -euo pipefail
PKGS=(build-essential cmake pkg-config
      libjansson-dev libmicrohttpd-dev libopenblas-dev libxxhash-dev
      libcmocka-dev libgraphviz-dev graphviz libsqlite3-dev
      python3-numpy python3-torch curl wrk
      chromium)
# Node.js for the browser explorer: Debian's nodejs and npm, unless a node
# and npm are already there (a NodeSource nodejs bundles npm and conflicts
# with Debian's npm package).
command -v node >/dev/null 2>&1 || PKGS+=(nodejs)
command -v npm >/dev/null 2>&1 || PKGS+=(npm)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
