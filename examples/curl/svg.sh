#!/usr/bin/env bash
# Draw the seed example's optimized HLO graph (scan: the while body as a
# cluster) and its device-memory timeline as SVG files.
#   examples/curl/svg.sh [BASE_URL] [OUT_DIR]   (defaults
#   http://127.0.0.1:8080 and a new temporary directory)
set -euo pipefail
BASE=${1:-http://127.0.0.1:8080}
OUT=${2:-$(mktemp -d)}
EXAMPLES=$(cd "$(dirname "$0")/.." && pwd)

id=$(curl -sS --fail-with-body --data @"$EXAMPLES/seed_64_linear.json" "$BASE/v1/compile" \
     | sed -n 's/^{"id":"\([0-9a-f]\{32\}\)".*/\1/p')
[ -n "$id" ] || { echo "no result id in the reply" >&2; exit 1; }
mkdir -p "$OUT"
curl -sS --fail-with-body -o "$OUT/graph.svg" "$BASE/v1/results/$id/graph.svg?stage=optimized"
curl -sS --fail-with-body -o "$OUT/memory.svg" "$BASE/v1/results/$id/memory.svg"
for f in graph memory; do
    grep -q '<svg' "$OUT/$f.svg" || { echo "$OUT/$f.svg is not SVG" >&2; exit 1; }
    echo "$OUT/$f.svg ($(wc -c < "$OUT/$f.svg") bytes)"
done
