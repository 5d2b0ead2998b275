#!/usr/bin/env bash
# Fails when a room of the engine includes a room above it.
#
#   scripts/check_rooms.sh        (CTest runs it as arch.rooms)
#
# The rooms, their levels and the public headers each owns are the table
# in docs/ARCHITECTURE.md between <!-- rooms:begin --> and
# <!-- rooms:end -->; that table is the only place the order is written.
# A file of a room may include:
#   - its own room's headers, and those of rooms at a lower level
#     ("ir/strbuf.h" from passes/, "hloscope/hs_ir.h" anywhere);
#   - never another room's private header (*_internal.h), whatever its
#     level, and never a room at its own level or above.
# Public headers (engine/include/hloscope/) belong to the room the table
# names and follow the same rule; server/ is the top level. A folder under
# engine/src or a public header missing from the table is an error too, so
# that a new room must be placed before it can be used.
set -euo pipefail
cd "$(dirname "$0")/.."

table=docs/ARCHITECTURE.md
rows=$(awk '/<!-- rooms:begin -->/ {on = 1; next}
            /<!-- rooms:end -->/ {on = 0}
            on && $1 ~ /^[0-9]+$/ {print}' "$table")
if [ -z "$rows" ]; then
  echo "check_rooms: no room table in $table" >&2
  exit 1
fi

# level NAME, owner HEADER (associative arrays from the table).
declare -A level owner
while read -r lvl room headers; do
  level[$room]=$lvl
  for h in $headers; do
    [ "$h" = "-" ] || owner[$h]=$room
  done
done <<<"$rows"

fail=0
problem() {
  echo "check_rooms: $*" >&2
  fail=1
}

for d in engine/src/*/; do
  r=$(basename "$d")
  [ -n "${level[$r]:-}" ] || problem "engine/src/$r/ is not in the room table of $table"
done
for f in engine/include/hloscope/*.h; do
  h=$(basename "$f")
  [ -n "${owner[$h]:-}" ] || problem "engine/include/hloscope/$h has no room in $table"
done

# check FILE ROOM: every quoted include of FILE against ROOM's level.
check() {
  local file=$1 room=$2 lv=${level[$2]}
  local n inc target tl
  while IFS=: read -r n inc; do
    inc=${inc#*\"}
    inc=${inc%%\"*}
    case $inc in
      hloscope/*) target=${owner[${inc#hloscope/}]:-} ;;
      */*) target=${inc%%/*} ;;
      *) continue ;; # a header of the file's own folder
    esac
    [ -n "$target" ] || continue # not an engine header (e.g. a server one)
    tl=${level[$target]:-}
    if [ -z "$tl" ]; then
      problem "$file:$n: includes \"$inc\" of unknown room '$target'"
    elif [ "$target" = "$room" ]; then
      continue
    elif [[ $inc == *_internal.h ]]; then
      problem "$file:$n: includes \"$inc\", private to $target/"
    elif [ "$tl" -ge "$lv" ]; then
      problem "$file:$n: $room (level $lv) includes \"$inc\" of $target (level $tl): rooms only include rooms below them"
    fi
  done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file" || true)
}

for d in engine/src/*/; do
  r=$(basename "$d")
  [ -n "${level[$r]:-}" ] || continue
  for f in "$d"*.[ch]; do
    [ -e "$f" ] && check "$f" "$r"
  done
done
for f in engine/include/hloscope/*.h; do
  r=${owner[$(basename "$f")]:-}
  [ -n "$r" ] && check "$f" "$r"
done
if [ -n "${level[server]:-}" ]; then
  for f in server/*.[ch]; do
    [ -e "$f" ] && check "$f" server
  done
fi

if [ "$fail" = 0 ]; then
  echo "check_rooms: $(wc -l <<<"$rows") rooms, every include points down"
fi
exit "$fail"
