"""The ingest service: parsing, chunking and walking a vault, and the service end to end."""
