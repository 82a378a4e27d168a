# ObsServer container: build with the Swift 6 image, run on slim Debian as a non-root user.
#   docker build -t obs-server .
#   docker run -p 8080:8080 -e OBS_TOKEN=change-me -v obs-data:/data obs-server

FROM swift:6.1-bookworm AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends libmicrohttpd-dev libsqlite3-dev libpq-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Sources ./Sources
RUN swift build -c release --static-swift-stdlib \
    && install -D "$(swift build -c release --show-bin-path)/obs-server" /out/obs-server

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends libmicrohttpd12 libsqlite3-0 libpq5 libstdc++6 curl ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin obs \
    && mkdir -p /data && chown obs:obs /data
COPY --from=build /out/obs-server /usr/local/bin/obs-server
COPY Public /srv/obs/Public
USER 10001
VOLUME ["/data"]
EXPOSE 8080
# Listens on every interface; the server refuses to start there without OBS_TOKEN (or --allow-open).
ENV OBS_HOST=0.0.0.0 OBS_PORT=8080 OBS_DATA_DIR=/data OBS_PUBLIC_DIR=/srv/obs/Public
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["curl", "-fsS", "http://127.0.0.1:8080/healthz"]
ENTRYPOINT ["/usr/local/bin/obs-server"]
