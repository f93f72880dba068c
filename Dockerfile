# Build the module with an official Rust image, then run it in the official Redis 7 image.
# Both stages are Debian bookworm, so the .so links against the same glibc it runs with.
# Used by docker-compose.yml: `docker compose up --build`.

FROM rust:1-bookworm AS build
# bindgen (run by the redis-module crate's build script) needs libclang and clang's headers.
RUN apt-get update \
 && apt-get install -y --no-install-recommends libclang-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /redis-bf
COPY . .
RUN cargo build --release --locked

FROM redis:7-bookworm
# Same layout as the repository, so ./redis.conf works unchanged (module at
# ../target/release/libredis_bf.so relative to ./data).
WORKDIR /redis-bf
COPY --from=build /redis-bf/target/release/libredis_bf.so target/release/libredis_bf.so
COPY redis.conf redis.conf
RUN mkdir -p data && chown redis:redis data
VOLUME /redis-bf/data
EXPOSE 6379
# Inside the container, listen on all interfaces; docker-compose.yml publishes the port on the
# host's loopback only.
CMD ["redis-server", "./redis.conf", "--bind", "0.0.0.0", "--protected-mode", "no"]
