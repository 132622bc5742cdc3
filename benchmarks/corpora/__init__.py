"""The benchmark corpora, written at run time from the shared data sets (no corpus text in the project)."""
