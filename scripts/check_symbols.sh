#!/usr/bin/env bash
# Fails when a built object exports a symbol outside the prefix convention
# of docs/ARCHITECTURE.md ("Symbol prefixes").
#
#   scripts/check_symbols.sh [BUILD_DIR]    (CTest runs it as arch.symbols)
#
# Reads the external symbols each object defines (`nm -g --defined-only`)
# in BUILD_DIR (default build/): the objects of libhloscope.a (engine/src)
# and of the hloscope binary (server/). An engine object may export
#   - hs_NAME   when NAME is declared in a public header
#               (engine/include/hloscope/): the public API;
#   - hs__NAME  engine-internal, shared between files of the engine;
#   - its room's prefix, from the table between <!-- prefixes:begin -->
#     and <!-- prefixes:end --> in docs/ARCHITECTURE.md (dev_ in device/).
# A server object exports only the server's prefixes of that table and
# main, and uses no engine-internal symbol (hs__, a room prefix): the
# server is built on the public headers. Everything else is `static`.
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
engine_objs="$build/CMakeFiles/hloscope.dir/engine/src"
server_objs="$build/CMakeFiles/hloscope_bin.dir/server"
for d in "$engine_objs" "$server_objs"; do
  [ -d "$d" ] || { echo "check_symbols: no $d (build first)" >&2; exit 1; }
done

table=docs/ARCHITECTURE.md
rows=$(awk '/<!-- prefixes:begin -->/ {on = 1; next}
            /<!-- prefixes:end -->/ {on = 0}
            on && $1 ~ /^[a-z_]+$/ && $2 ~ /_$/ {print}' "$table")
[ -n "$rows" ] || { echo "check_symbols: no prefix table in $table" >&2; exit 1; }
declare -A prefixes # room -> "pre1_ pre2_"
all_room_prefixes=""
while read -r room pres; do
  prefixes[$room]="$pres"
  all_room_prefixes="$all_room_prefixes $pres"
done <<<"$rows"

# Every hs_ identifier the public headers declare, macros expanded (the
# passes' hs_pass_<id>_run are generated from HS_PASS_LIST); a superset
# is fine: the question is only whether an hs_ name is public.
public=$(for h in engine/include/hloscope/*.h; do
           ${CC:-cc} -E -P -I engine/include "$h"
         done | grep -o '\bhs_[A-Za-z0-9_]*' | sort -u)

has_prefix() { # name "pre1_ pre2_"
  local p
  for p in $2; do
    [[ "$1" == "$p"* ]] && return 0
  done
  return 1
}

fail=0
problem() {
  echo "check_symbols: $1" >&2
  fail=1
}

# The symbols object $1 defines, one a line; compiler-made names dropped
# (target_clones' NAME.avx2 / NAME.resolver keep NAME; ASan's
# __odr_asan_gen_* and other __ names are the toolchain's).
defined() {
  nm -g --defined-only "$1" | awk 'NF >= 3 {sym = $NF; sub(/\..*/, "", sym); print sym}' |
    grep -v '^__' | sort -u
}

# Engine objects, read where CMake builds them (the archive's members
# lose their folder, and two rooms may have files of the same name).
while IFS= read -r o; do
  rel=${o#*/engine/src/}
  room=${rel%%/*}
  where="$room/$(basename "${o%.o}")"
  while read -r sym; do
    [ -n "$sym" ] || continue
    if [[ "$sym" == hs__* ]]; then
      continue
    elif [[ "$sym" == hs_* ]]; then
      grep -qx "$sym" <<<"$public" ||
        problem "$where: $sym is not declared in engine/include/hloscope/ (name it hs__${sym#hs_} or make it static)"
    elif ! has_prefix "$sym" "${prefixes[$room]:-}"; then
      problem "$where: $sym has neither hs_, hs__ nor room $room's prefix (${prefixes[$room]:-none}); make it static or rename it"
    fi
  done < <(defined "$o")
done < <(find "$engine_objs" -name '*.o' | sort)

for o in "$server_objs"/*.o; do
  while read -r sym; do
    [ -n "$sym" ] && [ "$sym" != main ] || continue
    has_prefix "$sym" "${prefixes[server]}" ||
      problem "server/$(basename "${o%.o}"): $sym has none of the server's prefixes (${prefixes[server]})"
  done < <(defined "$o")
  engine_private=$(nm -u "$o" | awk '{print $NF}' | grep '^hs__' || true)
  for p in $all_room_prefixes; do
    has_prefix "$p" "${prefixes[server]}" && continue
    engine_private="$engine_private $(nm -u "$o" | awk '{print $NF}' | grep "^$p" || true)"
  done
  for s in $engine_private; do
    problem "server/$(basename "$o"): uses the engine's internal $s (the server is built on the public headers)"
  done
done

[ "$fail" = 0 ] && echo "check_symbols: every exported symbol follows the prefix convention"
exit "$fail"
