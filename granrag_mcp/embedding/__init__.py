"""Sentence embeddings: `embedder` (the Embedder protocol and the batched, normalised runner), `encoders` (which
code runs a model folder) and `bert` (a BERT forward on torch alone, for the bundled model)."""
