-- Ingest decides a file is unchanged from its size and mtime before reading it, so a no-op sync of a large vault
-- reads no file contents. The content hash still decides when size or mtime differ.
ALTER TABLE vault_files ADD COLUMN size_bytes bigint NOT NULL DEFAULT 0 CHECK (size_bytes >= 0);
