#!/usr/bin/env bash
# Compare the seed example unrolled (a) and scanned (b): instruction counts,
# compile time, peak memory, their ratios (b / a) and which instructions
# were added or removed.
#   examples/curl/compare.sh [BASE_URL]      (default http://127.0.0.1:8080)
set -euo pipefail
BASE=${1:-http://127.0.0.1:8080}
EXAMPLES=$(cd "$(dirname "$0")/.." && pwd)

body=$(printf '{"model": %s, "a": {"loop": "unrolled"}, "b": {"loop": "scan"}}' \
              "$(cat "$EXAMPLES/seed_64_linear.json")")
reply=$(printf '%s' "$body" | curl -sS --fail-with-body --data-binary @- "$BASE/v1/compare")
echo "== ratios (b / a)"
printf '%s\n' "$reply" | sed -n 's/.*"ratios":\({[^}]*}\).*/\1/p'
echo "== diff counts"
printf '%s\n' "$reply" | sed -n 's/.*"counts":\({[^}]*}\).*/\1/p'
printf '%s' "$reply" | grep -q '"instructions_optimized"' \
    || { echo "no ratios in the reply: $reply" >&2; exit 1; }
