# One image for every agentq process: the API and each worker pool run it with another command. On a
# maintained Node LTS (Node 20's support ended in April 2026; the code still runs on 20.19 and later).
FROM node:24-bookworm-slim
# Tools the agents run: bash is there; python3 for the python tool. The jail: bubblewrap; for pools
# with AGENTQ_TOOL_NETWORK=egress, slirp4netns and nftables (util-linux brings nsenter).
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 ca-certificates bubblewrap slirp4netns nftables \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json tsconfig.base.json tsconfig.json ./
COPY packages ./packages
COPY apps ./apps
COPY prompts ./prompts
# The shipped configuration file (the built-in agents); mount your own over it, or set AGENTQ_CONFIG.
# (`agentq config init DIR` copies it, its prompts and .env.example to start from.)
COPY agentq.config.yaml agentq.config.schema.json .env.example ./
RUN npm ci --no-audit --no-fund && npm prune --omit=dev --ignore-scripts
ENV AGENTQ_DATA_DIR=/data
RUN mkdir -p /data && chown node:node /data
VOLUME /data
# Not root by default. docker-compose.yml runs the workers as root, so that the jail can give each task
# an unprivileged uid of its own, and the API as root with no capability but DAC_READ_SEARCH, to read
# those tasks' folders (see there). Logs: JSON lines on stdout.
USER node
ENTRYPOINT ["node", "apps/cli/dist/main.js"]
CMD ["start"]
