# The service image: one image, every role (ROLES=api|projector|dispatcher, comma-separated).
# Built by docker-compose.yml; also usable on its own:
#   docker build -t csr . && docker run -e EVENTSTORE_URL=... -e MONGODB_URL=... -e ROLES=api -p 8080:8080 csr

FROM node:20-slim AS build
WORKDIR /app
# Compilers only as a fallback for native modules without a prebuilt binary (better-sqlite3).
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 make g++ \
    && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
# --ignore-scripts: the package's own `prepare` (a build) needs the sources, copied below;
# the native dependency's install script is run explicitly instead.
RUN npm ci --ignore-scripts && npm rebuild better-sqlite3
# Sources (see .dockerignore for what stays out), then compile to dist/ and drop dev dependencies.
COPY . .
RUN mkdir -p bin && npm run build && npm prune --omit=dev

FROM node:20-slim
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
CMD ["node", "dist/src/main.js"]
