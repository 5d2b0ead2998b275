#!/usr/bin/env bash
# Builds the Docker image without a Docker engine and proves it serves.
#   scripts/docker-check.sh [bookworm|trixie]      (default bookworm)
# Steps (docs/DOCKER.md):
#  1. base image debian:12-slim / debian:13-slim: pulled when a registry
#     answers, else made locally from a debootstrap (minbase) rootfs from
#     Debian's package archive, imported with `buildah from scratch`
#  2. `buildah bud` of the Dockerfile (chroot isolation, vfs storage, docker
#     format so HEALTHCHECK is kept), timed; the image size
#  3. the image run as its runtime user: with podman, else `buildah run`,
#     else the image's rootfs mounted and chrooted into
#  4. checks: /healthz, the healthcheck command, POST /v1/compile of
#     examples/seed_64_linear.json, its graph.svg and memory.svg, the
#     explorer page and its assets, results surviving a restart, a clean
#     SIGTERM, and the message for a data directory the user cannot write
# Needs root and Debian's buildah (podman, debootstrap used when there); all
# state lives under $HS_DOCKER_WORK (default /var/tmp/hloscope-docker-check),
# never in the repository.
#   HS_DOCKER_CONTEXT=worktree   build the work tree (with .dockerignore)
#                                instead of the committed HEAD
#   HS_DOCKER_PORT=18080         loopback port of the check (trixie: 18081)
#   HS_DOCKER_KEEP=1             keep the server's container/rootfs mounted
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
release=${1:-bookworm}
HS_TOOL=docker-check
# shellcheck source=scripts/debian_base.sh
. scripts/debian_base.sh
PORT=${HS_DOCKER_PORT:-$([ "$release" = trixie ] && echo 18081 || echo 18080)}
IMAGE=localhost/hloscope:$release
CNAME=hloscope-check-$release

# ---- 2. build ------------------------------------------------------------
if [ "${HS_DOCKER_CONTEXT:-head}" = worktree ]; then
  ctx=$REPO
  log "context: the work tree $REPO (.dockerignore applies)"
else
  ctx=$WORK/context-$release
  rm -rf "$ctx"; mkdir -p "$ctx"
  git -C "$REPO" archive HEAD | tar -x -C "$ctx"
  log "context: HEAD $(git -C "$REPO" rev-parse --short HEAD) (git archive)"
fi
# The host's CA bundle and npm settings reach the npm step as build secrets
# (for a TLS-intercepting proxy); they are never written to a layer.
secrets=()
for ca in /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt; do
  if [ -s "$ca" ]; then secrets+=(--secret "id=ca,src=$ca"); break; fi
done
npmrc=${NPM_CONFIG_USERCONFIG:-$HOME/.npmrc}
[ -s "$npmrc" ] && secrets+=(--secret "id=npmrc,src=$npmrc")
log "building $IMAGE from $BASE (buildah bud, chroot isolation, vfs, docker format)"
t0=$(date +%s)
bh bud --format docker --isolation chroot --layers --pull=false \
  --build-arg "BASE=$BASE" "${secrets[@]}" -t "$IMAGE" -f "$ctx/Dockerfile" "$ctx" \
  >"$WORK/build-$release.log" 2>&1 || { tail -40 "$WORK/build-$release.log" >&2; die "buildah bud (log: $WORK/build-$release.log)"; }
t1=$(date +%s)
size=$(bh inspect --type image --format '{{.Size}}' "$IMAGE" 2>/dev/null || true)
[ -n "$size" ] && [ "$size" != 0 ] || size=$(bh images --noheading --format '{{.Size}}' "$IMAGE" | head -1)
log "built $IMAGE in $((t1 - t0)) s; size $size"
hc=$(bh inspect --type image --format '{{.Docker.Config.Healthcheck}}' "$IMAGE")
user=$(bh inspect --type image --format '{{.Docker.Config.User}}' "$IMAGE")
log "image user $user; healthcheck $hc"
case "$hc" in *healthz*) ;; *) die "the image has no HEALTHCHECK (was it built with --format docker?)" ;; esac
[ "$user" = 10001:10001 ] || die "runtime user is '$user', not 10001:10001"

# ---- 3. run ----------------------------------------------------------------
BASE_URL=http://127.0.0.1:$PORT
how=""; srv_pid=""; ctr=""; mnt=""
cleanup() {
  if [ -n "$srv_pid" ] && kill -0 "$srv_pid" 2>/dev/null; then kill "$srv_pid" 2>/dev/null || true; fi
  if [ "$how" = podman ]; then pm rm -f "$CNAME" >/dev/null 2>&1 || true; fi
  if [ -n "$mnt" ] && [ "${HS_DOCKER_KEEP:-0}" != 1 ]; then
    for m in dev proc; do umount "$mnt/$m" 2>/dev/null || true; done
  fi
  if [ -n "$ctr" ] && [ "${HS_DOCKER_KEEP:-0}" != 1 ]; then bh rm "$ctr" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
wait_health() {
  for _ in $(seq 1 120); do
    curl -fsS "$BASE_URL/healthz" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  return 1
}
# Starts the image's entrypoint as 10001:10001 on $PORT with data in $1.
start() {
  local data=$1
  case "$how" in
    podman)
      pm rm -f "$CNAME" >/dev/null 2>&1 || true
      pm run -d --name "$CNAME" --network host -e PORT="$PORT" "${RUN_LIMITS[@]}" \
        -v "$data:/var/lib/hloscope" "$IMAGE" >/dev/null 2>>"$WORK/podman-$release.log" ;;
    chroot)
      chroot --userspec=10001:10001 "$mnt" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin \
        HOME=/home/hloscope PORT="$PORT" DATA="$data" /usr/local/bin/hloscope-entrypoint \
        >>"$WORK/server-$release.log" 2>&1 &
      srv_pid=$! ;;
  esac
}
stop() {
  case "$how" in
    podman)
      pm stop -t 15 "$CNAME" >/dev/null 2>>"$WORK/podman-$release.log"
      rc=$(pm inspect --format '{{.State.ExitCode}}' "$CNAME")
      [ "$rc" = 0 ] || die "server exited $rc on SIGTERM" ;;
    chroot) kill -TERM "$srv_pid"; wait "$srv_pid" || die "server exited $? on SIGTERM"; srv_pid="" ;;
  esac
}
if command -v podman >/dev/null && pm run --rm --network host "${RUN_LIMITS[@]}" --entrypoint /bin/true "$IMAGE" >"$WORK/podman-$release.log" 2>&1; then
  how=podman
  datavol=$WORK/data-$release; rm -rf "$datavol"; mkdir -p "$datavol"; chown 10001:10001 "$datavol"
  start "$datavol"
else
  log "podman cannot run a container here ($(grep -v systemd "$WORK/podman-$release.log" 2>/dev/null | tail -1 || echo 'no podman')); running the image's rootfs with chroot"
  how=chroot
  ctr=$(bh from --pull=false "$IMAGE")
  mnt=$(bh mount "$ctr")
  mount -t proc proc "$mnt/proc"
  mount --rbind /dev "$mnt/dev"; mount --make-rslave "$mnt/dev"
  : >"$WORK/server-$release.log"
  start /var/lib/hloscope
fi
log "running the image ($how) on $BASE_URL"
wait_health || { tail -20 "$WORK/server-$release.log" 2>/dev/null >&2; [ "$how" = podman ] && pm logs "$CNAME" >&2; die "/healthz did not answer"; }

# ---- 4. checks -------------------------------------------------------------
pass=0
ok() { pass=$((pass + 1)); log "ok: $*"; }
curl -fsS "$BASE_URL/healthz" | grep -q '"status": *"ok"' || die "/healthz is not ok"
ok "/healthz"
if [ "$how" = podman ]; then
  pm healthcheck run "$CNAME" 2>>"$WORK/podman-$release.log" || die "podman healthcheck run"
  ok "HEALTHCHECK command (podman healthcheck run: $(pm inspect --format '{{.State.Health.Status}}' "$CNAME" 2>/dev/null))"
else
  hc_cmd=$(printf '%s' "$hc" | sed -n 's/.*\[CMD-SHELL \(.*\)\].*/\1/p')
  [ -n "$hc_cmd" ] || die "cannot read the HEALTHCHECK command from: $hc"
  chroot --userspec=10001:10001 "$mnt" /usr/bin/env -i PATH=/usr/bin:/bin PORT="$PORT" /bin/sh -c "$hc_cmd" \
    || die "HEALTHCHECK command failed in the image: $hc_cmd"
  ok "HEALTHCHECK command run in the image: $hc_cmd"
fi
reply=$(curl -fsS --data @examples/seed_64_linear.json "$BASE_URL/v1/compile") || die "POST /v1/compile"
field() { printf '%s' "$reply" | tr -d '\n' | sed -n "s/^{ *\"$1\": *\"\([^\"]*\)\".*/\1/p; t; s/.*\"$1\": *\"\([^\"]*\)\".*/\1/p"; }
id=$(field id); graph=$(field graph_svg); memory=$(field memory_svg)
[ -n "$id" ] && [ -n "$graph" ] && [ -n "$memory" ] || die "compile reply has no id/graph_svg/memory_svg: ${reply:0:300}"
ok "POST /v1/compile seed_64_linear -> $id"
for link in "$graph" "$memory"; do
  code=$(curl -sS -o "$WORK/got-$release.svg" -w '%{http_code} %{content_type}' "$BASE_URL$link")
  case "$code" in 200\ image/svg+xml*) ;; *) die "GET $link: $code" ;; esac
  grep -q '<svg' "$WORK/got-$release.svg" || die "GET $link: not an SVG"
  ok "GET $link ($(wc -c <"$WORK/got-$release.svg") bytes of SVG)"
done
curl -fsS "$BASE_URL/" >"$WORK/index-$release.html" || die "GET /"
asset=$(sed -n 's/.*src="\.\/\(assets\/[^"]*\.js\)".*/\1/p' "$WORK/index-$release.html" | head -1)
[ -n "$asset" ] || die "GET / is not the explorer page"
curl -fsS -o /dev/null "$BASE_URL/$asset" || die "GET /$asset"
ok "explorer page / and /$asset"
stop
ok "clean stop on SIGTERM"
start "${datavol:-/var/lib/hloscope}"
wait_health || die "/healthz after restart"
curl -fsS -o /dev/null "$BASE_URL/v1/results/$id" || die "result $id lost over a restart"
ok "result $id survives a restart"
stop
# A data directory the runtime user cannot write: a clear message, exit 1.
set +e
if [ "$how" = podman ]; then
  ro=$WORK/rootowned-$release; rm -rf "$ro"; mkdir -p "$ro"; chmod 755 "$ro"
  msg=$(pm run --rm --network host "${RUN_LIMITS[@]}" -v "$ro:/var/lib/hloscope" "$IMAGE" 2>&1); rc=$?
else
  mkdir -p "$mnt/srv/rootowned"; chmod 755 "$mnt/srv/rootowned"
  msg=$(chroot --userspec=10001:10001 "$mnt" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin \
        PORT="$PORT" DATA=/srv/rootowned /usr/local/bin/hloscope-entrypoint 2>&1); rc=$?
fi
set -e
msg=$(printf '%s\n' "$msg" | grep -v systemd || true)
[ "$rc" != 0 ] || die "the server started on a data directory it cannot write"
case "$msg" in *"is not writable by uid 10001"*) ok "unwritable data dir: $msg" ;; *) die "unwritable data dir said: $msg" ;; esac
# No build secret in the image.
if [ -z "$mnt" ]; then ctr=$(bh from --pull=false "$IMAGE"); mnt=$(bh mount "$ctr"); fi
for f in root/.npmrc home/hloscope/.npmrc run/secrets/ca run/secrets/npmrc; do
  [ ! -s "$mnt/$f" ] || die "/$f is in the image"
done
ok "no CA bundle or npmrc baked into the image"
log "PASS: $pass checks; $IMAGE ($release) built in $((t1 - t0)) s, size $size, run with $how"
