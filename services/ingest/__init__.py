"""The ingest service: a vault of markdown becomes chunks, context and vectors, incrementally."""
