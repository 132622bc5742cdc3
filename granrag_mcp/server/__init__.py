"""The MCP layer over the retrieval core: `app` (the server, its middleware and lifespan) over its rooms, which
import one way: `tools/` by group, `library/` (the engine loading in the background, resources, the watch, write
runs), `session/` (per-session memory), `schemas/` (what tools take and return) and `transport/` (stdio and HTTP)."""
