#!/usr/bin/env bash
# Compile the seed example (64 identical Linear(1024, 1024) layers) as a
# scan, print the summary, then follow its link to the optimized HLO.
#   examples/curl/compile.sh [BASE_URL]      (default http://127.0.0.1:8080)
set -euo pipefail
BASE=${1:-http://127.0.0.1:8080}
EXAMPLES=$(cd "$(dirname "$0")/.." && pwd)

summary=$(curl -sS --fail-with-body --data @"$EXAMPLES/seed_64_linear.json" \
               "$BASE/v1/compile?loop=scan")
echo "$summary"
id=$(printf '%s' "$summary" | sed -n 's/^{"id":"\([0-9a-f]\{32\}\)".*/\1/p')
[ -n "$id" ] || { echo "no result id in the reply" >&2; exit 1; }

echo "== $BASE/v1/results/$id/hlo?stage=optimized (first lines)"
curl -sS --fail-with-body "$BASE/v1/results/$id/hlo?stage=optimized" | sed -n '1,12p'
