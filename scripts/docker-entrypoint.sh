#!/bin/sh
# The container's entry point (Dockerfile): checks that the data directory is
# writable, then runs `hloscope serve` on $PORT (the one place the port is set:
# ENV PORT in the Dockerfile, which the HEALTHCHECK reads too).
#   docker run ... hloscope                   serve
#   docker run ... hloscope --workers 4       serve with extra options
#   docker run ... hloscope hloscope --help   any other command
set -eu
: "${PORT:=8080}" "${BIND:=0.0.0.0}" "${DATA:=/var/lib/hloscope}"
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  exec "$@"
fi
probe="$DATA/.hloscope-write-test.$$"
# (a subshell and touch: a failed redirection of the special builtin `:`
# would end the whole script before the message)
if ! (mkdir -p "$DATA" && touch "$probe" && rm -f "$probe") 2>/dev/null; then
  echo "hloscope: data directory $DATA is not writable by uid $(id -u): chown it" \
       "(e.g. chown -R $(id -u):$(id -g) on the host directory) or mount a writable volume" >&2
  exit 1
fi
exec hloscope serve --bind "$BIND" --port "$PORT" --data "$DATA" \
  --examples /usr/share/hloscope/examples --web /usr/share/hloscope/web "$@"
