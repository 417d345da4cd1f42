-- How the stored chunks were cut: the chunker's version (secondbrain.ingest.chunker.CHUNKING). When a sync runs a
-- chunker that cuts the same note differently, it reads every note again (the vectors of unchanged chunks are kept).
-- An index from before this table was chunked by version 1.
CREATE TABLE chunking (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    version    integer NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
