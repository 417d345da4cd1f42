-- When each note and each passage is from (secondbrain.ingest.note_dates): the first and last day, both inclusive,
-- and where that was read ('file name', 'front matter date', 'heading', 'modification time', ...). NULL before the note was
-- indexed by a version that reads dates (the chunking version 3 reads every note again).
ALTER TABLE vault_files
    ADD COLUMN date_start date,
    ADD COLUMN date_end date,
    ADD COLUMN date_source text NOT NULL DEFAULT '';

ALTER TABLE vault_chunks
    ADD COLUMN date_start date,
    ADD COLUMN date_end date,
    ADD COLUMN date_source text NOT NULL DEFAULT '';

-- For questions about a time: passages whose span meets a range of days.
CREATE INDEX vault_chunks_date_idx ON vault_chunks (date_start, date_end);
