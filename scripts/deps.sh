#!/usr/bin/env bash
# Installs the Debian packages (Debian 12 bookworm or 13 trixie) hloscope
# builds, tests and runs with. Safe to run again: installs only what is missing.
#   scripts/deps.sh          everything: build, tests, benchmarks (the README's
#                            scripts/run.sh and scripts/test.sh use this)
#   scripts/deps.sh build    only what building the binary and the browser
#                            explorer needs (the Dockerfile's build stage)
set -euo pipefail
set_name=${1:-all}
# Building: the C toolchain and libraries (cmocka and libxml2 too: CMake
# requires them for the unit tests; unit.render_svg parses SVG with libxml2), and
# Node.js + npm for the explorer (web/; its package.json pins build tools that
# run on Debian 12's nodejs 18 and npm 9).
BUILD=(build-essential cmake pkg-config ca-certificates
       libjansson-dev libmicrohttpd-dev libopenblas-dev libxxhash-dev
       libcmocka-dev libgraphviz-dev libsqlite3-dev libxml2-dev)
# Tests and benchmarks: graphviz's tools, Debian's python3 (/usr/bin/python3,
# which the tests call by that path) with numpy, torch and torchvision (real
# models built with random weights, nothing downloaded) for the reference
# checks, curl and wrk, chromium for the browser tests (web.e2e); pip, venv
# and setuptools for `pip install ./python` (the hloscope package, tests/python).
TEST=(graphviz python3 python3-numpy python3-torch python3-torchvision
      python3-pip python3-venv
      python3-setuptools curl wrk chromium)
case "$set_name" in
  build) PKGS=("${BUILD[@]}") ;;
  all)   PKGS=("${BUILD[@]}" "${TEST[@]}") ;;
  *) echo "usage: scripts/deps.sh [build|all]" >&2; exit 2 ;;
esac
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
