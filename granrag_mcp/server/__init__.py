"""The MCP layer over the retrieval core: `app` (the server, its lifespan, stdio and HTTP), the tools by group
(`tools_search`, `tools_context`, `tools_library`), their argument types and result rendering."""
