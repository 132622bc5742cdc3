"""Sentence embeddings: `factory` (Settings to an embedder), `embedder` (the Embedder protocol and the batched,
normalised runner), `encoders` (which code runs a model folder), `pooling` (mean pooling as sentence-transformers
does it) and `bert` (a BERT forward on torch alone, for the bundled model)."""
