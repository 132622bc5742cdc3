"""Word analysis shared by indexing and queries: words, concept keys, and the concepts of a text."""
