"""The MCP layer over the retrieval core: `app` (the server, its middleware and lifespan), `state` (the engine,
loading in the background), and its rooms: `tools/` by group, `schemas/` (what tools take and return),
`transport/` (stdio and HTTP), `library/` (resources, the watch, write runs) and `session/` (per-session memory)."""
