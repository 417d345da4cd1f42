-- Counting the sections a statement adds took time quadratic in a note's headings: for each section it inserted, the
-- insert trigger counted that section's chunks with a subquery of its own, and no index has heading_path, so each
-- subquery read all of the note's chunks. A note of 16,000 one-line sections (165 KB) kept a database core busy until
-- the 60 s statement timeout ended the write (found by a hostile probe). Now the inserted notes' chunks are counted
-- per section in one grouped pass and joined to what the statement added: the same count, in time linear in the
-- chunks of the notes written.

CREATE OR REPLACE FUNCTION vault_chunks_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM secondbrain_add_postings(ARRAY(SELECT id FROM new_chunks));
    UPDATE corpus_stats SET chunks = chunks + (SELECT count(*) FROM new_chunks),
                            total_length = total_length + (SELECT coalesce(sum(lexeme_count), 0) FROM new_chunks),
                            -- A section is new when every chunk it has now came in this statement.
                            sections = sections + (
                                SELECT count(*)
                                FROM (SELECT file_id, heading_path, count(*) AS added FROM new_chunks GROUP BY 1, 2) n
                                JOIN (SELECT c.file_id, c.heading_path, count(*) AS has
                                      FROM vault_chunks c
                                      WHERE c.file_id IN (SELECT DISTINCT file_id FROM new_chunks)
                                      GROUP BY 1, 2) s USING (file_id, heading_path)
                                WHERE n.added = s.has);
    RETURN NULL;
END $$;
