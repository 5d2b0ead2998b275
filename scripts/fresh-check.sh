#!/usr/bin/env bash
# The README's test command on a fresh Debian machine: the committed HEAD
# (git archive, no build tree) in a container of debian:12-slim (or 13) that
# has nothing but the base system -- no node, no python3, no compiler --
# runs `bash scripts/test.sh`, which must install all it needs itself
# (docs/DOCKER.md, "A fresh machine"). The image this machine runs on has a
# newer Node.js and a pyenv python3 ahead of Debian's; this check does not.
#   scripts/fresh-check.sh [bookworm|trixie]        (default bookworm)
# ../shared (the real dumps some tests read) is mounted read-only beside
# the copy, as on a developer's machine. Behind a TLS-intercepting proxy
# the host's CA bundle is handed to npm (NODE_EXTRA_CA_CERTS), as a user
# there would have configured it. The container may mount (SYS_ADMIN), as
# root on a fresh machine may: api.edge.full_disk_is_507_and_reads_go_on
# fills a private tmpfs. Needs root, podman, buildah; state under
# $HS_DOCKER_WORK like scripts/docker-check.sh (whose base image it shares).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
release=${1:-bookworm}
HS_TOOL=fresh-check
# shellcheck source=scripts/debian_base.sh
. scripts/debian_base.sh
shared=$(cd "$REPO/.." && pwd)/shared
[ -d "$shared" ] || die "no ../shared next to the repository ($shared)"
dir=$WORK/fresh-$release
rm -rf "$dir"
mkdir -p "$dir/main"
git -C "$REPO" archive HEAD | tar -x -C "$dir/main"
mounts=(-v "$dir:/w" -v "$shared:/w/shared:ro")
for ca in /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt; do
  if [ -s "$ca" ]; then
    mounts+=(-v "$ca:/run/host-ca.crt:ro" -e NODE_EXTRA_CA_CERTS=/run/host-ca.crt)
    break
  fi
done
log "HEAD $(git -C "$REPO" rev-parse --short HEAD) in $BASE: bash scripts/test.sh (log: $WORK/fresh-$release.log)"
t0=$(date +%s)
set +e
pm run --rm --network host --shm-size 1g --cap-add SYS_ADMIN "${RUN_LIMITS[@]}" "${mounts[@]}" "$BASE" bash -c '
  echo "before: node $(command -v node || echo none), python3 $(command -v python3 || echo none), cc $(command -v cc || echo none)"
  cd /w/main && bash scripts/test.sh; rc=$?
  echo "after: node $(node --version) at $(command -v node), npm $(npm --version), $(/usr/bin/python3 --version), torch $(/usr/bin/python3 -c "import torch; print(torch.__version__)")"
  exit $rc' >"$WORK/fresh-$release.log" 2>&1
rc=$?
set -e
t1=$(date +%s)
grep -E '^before:|^after:' "$WORK/fresh-$release.log" | while read -r l; do log "$l"; done
summary=$(grep -E 'tests passed, [0-9]+ tests failed out of' "$WORK/fresh-$release.log" | tail -1)
[ "$rc" = 0 ] || { tail -30 "$WORK/fresh-$release.log" >&2; die "scripts/test.sh exited $rc after $((t1 - t0)) s: ${summary:-no CTest summary}"; }
log "PASS: ${summary} ($release, $((t1 - t0)) s from a bare base image)"
