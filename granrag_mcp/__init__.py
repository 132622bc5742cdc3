"""granrag-mcp: dual-granular and hierarchical retrieval over persistent FAISS indices."""

__version__ = "0.8.1"
