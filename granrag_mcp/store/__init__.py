"""The persistent store: generations of FAISS, BM25 and SQLite files described by a checksummed manifest."""
