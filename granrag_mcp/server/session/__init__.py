"""Per client session: its recent queries (`memory`) and what every search tool does with them (`search`)."""
