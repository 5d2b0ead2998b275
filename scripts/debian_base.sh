# Sourced by scripts/docker-check.sh and scripts/fresh-check.sh: a Debian
# base image (debian:12-slim or debian:13-slim) in a containers storage of
# our own, without a Docker engine (docs/DOCKER.md).
#   in:  release (bookworm|trixie), HS_TOOL (the caller's name, for messages)
#   out: BASE (the image), base, WORK ($HS_DOCKER_WORK, default
#        /var/tmp/hloscope-docker-check), log/die, bh (buildah) and pm
#        (podman) on that storage, RUN_LIMITS for `pm run`
# The image is pulled when a registry answers, else made from a debootstrap
# (minbase) rootfs of Debian's archive, imported with `buildah from scratch`.
case "$release" in
  bookworm) base=debian:12-slim ;;
  trixie)   base=debian:13-slim ;;
  *) echo "usage: scripts/$HS_TOOL.sh [bookworm|trixie]" >&2; exit 2 ;;
esac
WORK=${HS_DOCKER_WORK:-/var/tmp/hloscope-docker-check}
mkdir -p "$WORK"
log() { printf '[%s] %s\n' "$HS_TOOL" "$*"; }
die() { printf '[%s] FAILED: %s\n' "$HS_TOOL" "$*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run as root (buildah and podman with vfs storage)"
# Debian's buildah builds; podman with runc runs the image when the host
# lets it; debootstrap makes a base image when no registry answers.
need=()
for tool in buildah podman runc debootstrap; do command -v "$tool" >/dev/null || need+=("$tool"); done
if [ ${#need[@]} -gt 0 ]; then
  log "installing Debian's ${need[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null \
    || command -v buildah >/dev/null || die "cannot install buildah"
fi
# One storage of our own (vfs: no overlay or fuse needed), apart from any
# other containers storage on this machine.
STORE=(--root "$WORK/storage" --runroot "$WORK/run" --storage-driver vfs)
export BUILDAH_ISOLATION=chroot
bh() { buildah "${STORE[@]}" "$@"; }
# podman: cgroupfs and a file event log (no systemd needed); runc where it is
# installed (crun refuses a host whose cgroups are in hybrid v1+v2 mode).
PM_RUNTIME=()
command -v runc >/dev/null && PM_RUNTIME=(--runtime runc)
pm() { podman "${STORE[@]}" --cgroup-manager cgroupfs --events-backend file "${PM_RUNTIME[@]}" "$@"; }
# podman gives a rootful container RLIMIT_NOFILE 1048576 by default, which a
# host without CAP_SYS_RESOURCE cannot grant: ask for the limits we have.
nproc=$(ulimit -Su); { [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ]; } && nproc=32768
RUN_LIMITS=(--ulimit "nofile=$(ulimit -Sn):$(ulimit -Hn)" --ulimit "nproc=$nproc:$nproc")

# ---- 1. base image -------------------------------------------------------
if bh inspect --type image "localhost/$base" >/dev/null 2>&1; then
  log "base: localhost/$base (made earlier)"
  BASE=localhost/$base
elif timeout 60 buildah "${STORE[@]}" pull -q "docker.io/library/$base" >/dev/null 2>&1; then
  log "base: docker.io/library/$base (pulled)"
  BASE=docker.io/library/$base
else
  log "base: no image registry answers; making localhost/$base with debootstrap $release"
  rootfs=$WORK/rootfs-$release
  rm -rf "$rootfs"
  debootstrap --variant=minbase "$release" "$rootfs" http://deb.debian.org/debian >"$WORK/debootstrap-$release.log" 2>&1 \
    || die "debootstrap $release (see $WORK/debootstrap-$release.log)"
  # What the official slim image has: deb822 sources with updates and
  # security, no docs/man pages/locales, apt caches cleaned.
  rm -f "$rootfs/etc/apt/sources.list"
  cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: http://deb.debian.org/debian
Suites: $release $release-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: $release-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  cat >"$rootfs/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
EOF
  echo 'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };' \
    >"$rootfs/etc/apt/apt.conf.d/docker-clean"
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/archives/*.deb \
         "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/*
  : >"$rootfs/etc/resolv.conf"; : >"$rootfs/etc/hostname"
  ctr=$(bh from scratch)
  mnt=$(bh mount "$ctr")
  cp -a "$rootfs/." "$mnt/"
  bh umount "$ctr" >/dev/null
  bh config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --cmd bash --os linux --arch "$(dpkg --print-architecture)" "$ctr"
  bh commit -q --format docker "$ctr" "localhost/$base" >/dev/null
  bh rm "$ctr" >/dev/null
  rm -rf "$rootfs"
  BASE=localhost/$base
fi

