#!/usr/bin/env bash
# expect.sh RC REGEX -- COMMAND...: runs COMMAND and passes when it exits
# with RC and its combined output matches the extended REGEX.
set -u
want_rc=$1; regex=$2; shift 3
out=$("$@" 2>&1); rc=$?
if [ "$rc" != "$want_rc" ]; then
  printf 'expected exit %s, got %s\n--- output ---\n%s\n' "$want_rc" "$rc" "$out"; exit 1
fi
if ! grep -Eq -- "$regex" <<<"$out"; then
  printf 'output does not match /%s/\n--- output ---\n%s\n' "$regex" "$out"; exit 1
fi
echo "ok: exit $rc, output matches /$regex/"
