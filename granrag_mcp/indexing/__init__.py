"""Indexing, one module per stage: `discovery` (which files), `formats/` (one extractor per format, behind a
registry, with `decoding`, bytes to text) and `extract` (a document's plain text), `sentences`, `chunking` and
`semantic_chunking` (the nested chunks of every level), `chunk_vectors` (the vectors of chunks longer than the
model's window), `documents` (the per-document stages both engines share) and `pipeline` (the run that diffs,
embeds and hands one generation to the store's commit)."""
