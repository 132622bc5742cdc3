"""The library as the server shows it: documents and chunks as resources, each new generation announced (`watch`),
and the index runs the write tools start (`writes`)."""
