#!/usr/bin/env bash
# Builds hloscope and starts its REST server with the examples loaded; the
# server prints its URL. Stop it with Ctrl-C (it finishes in-flight work).
#   scripts/run.sh                 serve on 127.0.0.1:8080 (PORT, BIND, DATA
#                                  override port, address, data directory)
#   scripts/run.sh --build-only    build the binary and the explorer only,
#                                  installing only the build packages
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--build-only" ]; then
  bash scripts/deps.sh build
else
  bash scripts/deps.sh
fi
# The browser explorer (web/, served by `hloscope serve`), when npm is here.
if command -v npm >/dev/null; then
  (cd web && npm ci --no-audit --no-fund && npm run build)
else
  echo "npm not found: the browser explorer (web/) is not built" >&2
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target hloscope_bin
if [ "${1:-}" = "--build-only" ]; then
    exit 0
fi
echo "open http://${BIND:-127.0.0.1}:${PORT:-8080}/ in a browser for the explorer"
echo "try:  curl --data @examples/seed_64_linear.json http://${BIND:-127.0.0.1}:${PORT:-8080}/v1/compile"
exec build/hloscope serve --port "${PORT:-8080}" --bind "${BIND:-127.0.0.1}" \
    --data "${DATA:-hloscope-data}" --examples examples
