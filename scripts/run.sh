#!/usr/bin/env bash
# Builds hloscope and runs the seed example on the emulated device.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target hloscope_bin
echo "== hloscope compile examples/seed_64_linear.json --emit json"
build/hloscope compile examples/seed_64_linear.json --emit json
echo "== hloscope run examples/seed_64_linear.json"
build/hloscope run examples/seed_64_linear.json
