# ObsServer container: build with the Swift 6 image, run on slim Debian as a non-root user.
#   docker build -t obs-server .
#   docker run -p 8080:8080 -e OBS_TOKEN=change-me -v obs-data:/data obs-server
# `make image` builds the `prebuilt` target instead: the same runtime stage around a binary built
# on this machine (build/image/obs-server, `swift build -c release --experimental-lto-mode=full --static-swift-stdlib`), on a
# base of your choice (BASE; without a registry, one made from Debian's packages with mmdebstrap:
# deploy/image.py, docs/DEPLOY.md).
ARG BASE=debian:bookworm-slim

FROM swift:6.1-bookworm AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends libmicrohttpd-dev libsqlite3-dev libpq-dev libssl-dev libcurl4-openssl-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Sources ./Sources
RUN swift build -c release --experimental-lto-mode=full --static-swift-stdlib \
    && install -D -s "$(swift build -c release --experimental-lto-mode=full --static-swift-stdlib --show-bin-path)/obs-server" /out/obs-server

# The runtime stage: everything but the binary.
FROM ${BASE} AS runtime
RUN apt-get update \
    && apt-get install -y --no-install-recommends libmicrohttpd12 libsqlite3-0 libpq5 libssl3 libcurl4 libstdc++6 curl ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin obs \
    && mkdir -p /data && chown obs:obs /data
COPY Public /srv/obs/Public
USER 10001
VOLUME ["/data"]
EXPOSE 8080
# Listens on every interface; the server refuses to start there without OBS_TOKEN (or --allow-open).
ENV OBS_HOST=0.0.0.0 OBS_PORT=8080 OBS_DATA_DIR=/data OBS_PUBLIC_DIR=/srv/obs/Public
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["curl", "-fsS", "http://127.0.0.1:8080/healthz"]
ENTRYPOINT ["/usr/local/bin/obs-server"]

# `--target prebuilt`: the binary from the build context (make image).
FROM runtime AS prebuilt
COPY build/image/obs-server /usr/local/bin/obs-server

# The default target (docker build .): the binary from the build stage.
FROM runtime
COPY --from=build /out/obs-server /usr/local/bin/obs-server
