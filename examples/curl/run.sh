#!/usr/bin/env bash
# Run the MLP example on the emulated TPU v5e: real f32 outputs, simulated
# time, measured peak memory; then the buffer assignment's memory stats.
#   examples/curl/run.sh [BASE_URL]          (default http://127.0.0.1:8080)
set -euo pipefail
BASE=${1:-http://127.0.0.1:8080}
EXAMPLES=$(cd "$(dirname "$0")/.." && pwd)

result=$(curl -sS --fail-with-body --data @"$EXAMPLES/mlp.json" \
              "$BASE/v1/run?device=tpu-v5e")
echo "$result"
id=$(printf '%s' "$result" | sed -n 's/^{"id":"\([0-9a-f]\{32\}\)".*/\1/p')
[ -n "$id" ] || { echo "no result id in the reply" >&2; exit 1; }
printf '%s' "$result" | grep -q '"outputs":\[{"shape":"f32\[8,10\]"' \
    || { echo "no output in the reply" >&2; exit 1; }

echo "== $BASE/v1/results/$id/memory.json (the start)"
curl -sS --fail-with-body "$BASE/v1/results/$id/memory.json" | cut -c1-600
echo
