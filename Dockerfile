# hloscope REST server, multi-stage.
#   docker build -t hloscope .
#   docker run --rm -p 8080:8080 -v hloscope-data:/var/lib/hloscope hloscope
# The build stage uses the project's own scripts (scripts/deps.sh installs
# the Debian packages, scripts/run.sh --build-only builds the binary and the
# browser explorer), the same ones a developer and CI run; the runtime stage
# has only the shared libraries, the binary, the examples and web/dist.

FROM debian:12-slim AS build
WORKDIR /src
COPY scripts/deps.sh scripts/deps.sh
RUN apt-get update -qq && bash scripts/deps.sh && rm -rf /var/lib/apt/lists/*
COPY . .
RUN rm -rf build && bash scripts/run.sh --build-only && strip build/hloscope

FROM debian:12-slim AS runtime
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      libjansson4 libmicrohttpd12 libopenblas0 libxxhash0 libsqlite3-0 \
      libgvc6 graphviz curl ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --home-dir /var/lib/hloscope --create-home --shell /usr/sbin/nologin hloscope
COPY --from=build /src/build/hloscope /usr/local/bin/hloscope
COPY --from=build /src/examples /usr/share/hloscope/examples
COPY --from=build /src/web/dist /usr/share/hloscope/web
USER hloscope
WORKDIR /var/lib/hloscope
VOLUME /var/lib/hloscope
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
STOPSIGNAL SIGTERM
ENTRYPOINT ["hloscope", "serve", "--bind", "0.0.0.0", "--port", "8080", \
            "--data", "/var/lib/hloscope", "--examples", "/usr/share/hloscope/examples", \
            "--web", "/usr/share/hloscope/web"]
