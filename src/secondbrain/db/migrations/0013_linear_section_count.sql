-- Counting the sections a statement adds or removes took time quadratic in a note's headings: for each section, the
-- triggers looked at the note's chunks with a subquery of its own, and no index has heading_path, so each subquery
-- read all of the note's chunks (on a delete, the ones just deleted too, still in the index until vacuumed). A note
-- of 16,000 one-line sections (165 KB) kept a database core busy until the 60 s statement timeout ended the write
-- (found by a hostile probe), and deleting it took 8 s. Now each count is a difference of sets (EXCEPT, which the
-- planner does by hashing or sorting, never by a loop within a loop, whatever it guesses of a transition table's
-- size) over the chunks of the notes written, read once through the file_id index: the same counts, in time linear
-- in those chunks.

CREATE OR REPLACE FUNCTION vault_chunks_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM secondbrain_add_postings(ARRAY(SELECT id FROM new_chunks));
    UPDATE corpus_stats SET chunks = chunks + (SELECT count(*) FROM new_chunks),
                            total_length = total_length + (SELECT coalesce(sum(lexeme_count), 0) FROM new_chunks),
                            -- A section is new when no chunk of it came before this statement.
                            sections = sections + (
                                SELECT count(*) FROM (
                                    SELECT file_id, heading_path FROM new_chunks
                                    EXCEPT
                                    SELECT file_id, heading_path FROM (
                                        SELECT id, file_id, heading_path FROM vault_chunks
                                        WHERE file_id = ANY (ARRAY(SELECT DISTINCT file_id FROM new_chunks))
                                        EXCEPT
                                        SELECT id, file_id, heading_path FROM new_chunks
                                    ) earlier
                                ) added);
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION vault_chunks_after_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE corpus_stats SET chunks = chunks - (SELECT count(*) FROM old_chunks),
                            total_length = total_length - (SELECT coalesce(sum(lexeme_count), 0) FROM old_chunks),
                            -- A section is gone when none of its chunks is left.
                            sections = sections - (
                                SELECT count(*) FROM (
                                    SELECT file_id, heading_path FROM old_chunks
                                    EXCEPT
                                    SELECT file_id, heading_path FROM vault_chunks
                                    WHERE file_id = ANY (ARRAY(SELECT DISTINCT file_id FROM old_chunks))
                                ) gone);
    RETURN NULL;
END $$;
