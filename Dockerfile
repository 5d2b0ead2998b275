# hloscope REST server + browser explorer, multi-stage (docs/DOCKER.md).
#   docker build -t hloscope .
#   docker run --rm -p 8080:8080 -v hloscope-data:/var/lib/hloscope hloscope
# Debian 13 instead of 12:  --build-arg BASE=debian:13-slim
# Behind a TLS-intercepting proxy, hand the build the host's CA bundle (and npm
# settings) as build secrets; they are mounted for the npm step only and never
# land in a layer (scripts/docker-check.sh does this):
#   --secret id=ca,src=/etc/ssl/certs/ca-certificates.crt --secret id=npmrc,src=$HOME/.npmrc
ARG BASE=debian:12-slim

FROM ${BASE} AS build
WORKDIR /src
# 1. Build packages only (scripts/deps.sh build: compiler, -dev libraries,
#    nodejs + npm; no test packages such as python3-torch or chromium).
COPY scripts/deps.sh scripts/deps.sh
RUN bash scripts/deps.sh build && rm -rf /var/lib/apt/lists/*
# 2. The explorer's npm packages, from the lockfile alone: a source edit
#    does not re-run this layer.
COPY web/package.json web/package-lock.json web/
RUN --mount=type=secret,id=ca,required=false \
    --mount=type=secret,id=npmrc,required=false \
    cd web \
 && if [ -s /run/secrets/ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/ca; fi \
 && if [ -s /run/secrets/npmrc ]; then export NPM_CONFIG_USERCONFIG=/run/secrets/npmrc; fi \
 && npm ci --no-audit --no-fund \
 && rm -rf /root/.npm
# 3. The sources: the explorer, then the binary.
COPY . .
RUN cd web && npm run build
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo \
 && cmake --build build -j"$(nproc)" --target hloscope_bin \
 && strip build/hloscope \
 && ldd build/hloscope | awk '$3 ~ /^\// {print $3}' \
    | while read -r lib; do dpkg -S "$lib" 2>/dev/null || dpkg -S "$(readlink -f "$lib")"; done \
    | cut -d: -f1 | sort -u > build/runtime-packages \
 && cat build/runtime-packages

FROM ${BASE} AS runtime
# The shared libraries the binary links (the Debian packages found with
# dpkg -S in the build stage, so the names fit bookworm and trixie alike),
# graphviz's layout plugins, and curl for the healthcheck.
COPY --from=build /src/build/runtime-packages /tmp/runtime-packages
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      $(cat /tmp/runtime-packages) graphviz curl \
 && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages \
 && groupadd --gid 10001 hloscope \
 && useradd --uid 10001 --gid 10001 --home-dir /home/hloscope --create-home \
      --shell /usr/sbin/nologin hloscope \
 && install -d -o 10001 -g 10001 -m 0750 /var/lib/hloscope
COPY --from=build /src/build/hloscope /usr/local/bin/hloscope
COPY --from=build /src/examples /usr/share/hloscope/examples
COPY --from=build /src/web/dist /usr/share/hloscope/web
COPY --from=build /src/scripts/docker-entrypoint.sh /usr/local/bin/hloscope-entrypoint
# PORT is the one place the port is set: the entrypoint serves on it and the
# healthcheck asks it. The data volume is not the user's home.
ENV PORT=8080 DATA=/var/lib/hloscope HOME=/home/hloscope
USER 10001:10001
WORKDIR /home/hloscope
VOLUME /var/lib/hloscope
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD curl -fsS "http://127.0.0.1:${PORT}/healthz" >/dev/null || exit 1
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/hloscope-entrypoint"]
