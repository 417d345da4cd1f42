-- The file line a note's stored body starts on (1 without front matter), so reading a note's lines
-- (RetrieveService.GetNote, the note tools) numbers them as passages do: by the file's lines.
--
-- Rows written before this column cannot know it. Clearing their size, mtime and content hash makes the next sync
-- read every note once and rewrite its row; every chunk is unchanged, so it keeps its vector and nothing is
-- re-embedded. Until then such a note reads from line 1 and says its line numbers are not known yet.

ALTER TABLE vault_files ADD COLUMN body_start_line integer CHECK (body_start_line >= 1);

UPDATE vault_files SET mtime = NULL, content_hash = '' WHERE status = 'indexed';
