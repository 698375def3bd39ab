# The service image: one image, every role (ROLES=api|projector|dispatcher, comma-separated).
# Built by docker-compose.yml; also usable on its own:
#   docker build -t csr . && docker run -e EVENTSTORE_URL=... -e MONGODB_URL=... -e MASTER_KEY_FILE=/run/secrets/master_key \
#     -v "$PWD/master.key:/run/secrets/master_key:ro" -e ROLES=api -p 8080:8080 csr

# Node 24: better-sqlite3 13 ships a Node-API binary for it, so the image needs no compilers
# (see src/sqlite/driver.ts for why Node 20 gets 12.x instead).
FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: the package's own `prepare` (a build) needs the sources, copied below, and the
# optional better-sqlite3 12 (Node 20 only) need not compile here.
RUN npm ci --ignore-scripts
# Sources (see .dockerignore for what stays out), then compile to dist/ and drop dev dependencies.
COPY . .
RUN mkdir -p bin && npm run build && npm prune --omit=dev --omit=optional

FROM node:24-slim
# An init as PID 1: it forwards SIGTERM to node and reaps processes node did not start (a child
# whose parent died), which node as PID 1 never does (docs/operations.md).
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini \
  && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    DATA_DIR=/data
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 8080
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "dist/src/main.js"]
