"""The library the server holds: its engine, loading in the background (`state`), documents and chunks as
resources, each new generation announced (`watch`), the index runs the write tools start (`writes`) and the sync
of `serve --library` (`folders`)."""
