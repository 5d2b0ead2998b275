#!/usr/bin/env bash
# Builds hloscope and runs every test with CTest.
#   scripts/test.sh            release build in build/
#   HS_SANITIZE=1 scripts/test.sh   ASan+UBSan build in build-asan/
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
if [ "${HS_SANITIZE:-0}" = "1" ]; then
  dir=build-asan; flags=(-DHS_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug)
else
  dir=build; flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
fi
# The browser explorer (web/, served by `hloscope serve`), when npm is here.
if command -v npm >/dev/null; then
  (cd web && npm ci --no-audit --no-fund && npm run build)
else
  echo "npm not found: the browser explorer (web/) is not built" >&2
fi
cmake -S . -B "$dir" "${flags[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
ctest --test-dir "$dir" --output-on-failure -j"$(nproc)"
