"""Indexing, one module per stage: `discovery` (which files), `extract` and `html` (their plain text, decoded by
`decoding`), `sentences` and `chunking` (the nested chunks of every level), `chunk_vectors` (the vectors of chunks
longer than the model's window) and `pipeline` (the incremental run that embeds and commits a generation)."""
