-- The number of notes with chunks, beside the chunk count in corpus_stats: the lexical arm scores each chunk's note
-- too (BM25 over the note's chunks taken together), which needs the average note length, total_length / notes.
-- Kept by the same statement triggers as the chunk totals, so every write path keeps it exact.

ALTER TABLE corpus_stats ADD COLUMN notes bigint NOT NULL DEFAULT 0;

CREATE OR REPLACE FUNCTION vault_chunks_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM secondbrain_add_postings(ARRAY(SELECT id FROM new_chunks));
    UPDATE corpus_stats SET chunks = chunks + (SELECT count(*) FROM new_chunks),
                            total_length = total_length + (SELECT coalesce(sum(lexeme_count), 0) FROM new_chunks),
                            -- A note is new to the corpus when every chunk it now has came in this statement.
                            notes = notes + (
                                SELECT count(*) FROM (SELECT file_id, count(*) AS added FROM new_chunks GROUP BY file_id) n
                                WHERE n.added = (SELECT count(*) FROM vault_chunks c WHERE c.file_id = n.file_id));
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION vault_chunks_after_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE corpus_stats SET chunks = chunks - (SELECT count(*) FROM old_chunks),
                            total_length = total_length - (SELECT coalesce(sum(lexeme_count), 0) FROM old_chunks),
                            notes = notes - (
                                SELECT count(DISTINCT o.file_id) FROM old_chunks o
                                WHERE NOT EXISTS (SELECT 1 FROM vault_chunks c WHERE c.file_id = o.file_id));
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION secondbrain_rebuild_lexical_index() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    -- TRUNCATE fires no row or statement delete triggers, so the statistics are cleared by hand.
    TRUNCATE chunk_postings, lexeme_stats;
    PERFORM set_config('secondbrain.rebuilding_lexical_index', 'on', true);
    UPDATE vault_chunks SET context = context;  -- fires vault_chunks_set_tsv
    PERFORM set_config('secondbrain.rebuilding_lexical_index', 'off', true);
    UPDATE vault_files SET title = title;  -- fires vault_files_set_tsv
    PERFORM secondbrain_add_postings(NULL);
    UPDATE corpus_stats SET chunks = (SELECT count(*) FROM vault_chunks),
                            total_length = (SELECT coalesce(sum(lexeme_count), 0) FROM vault_chunks),
                            notes = (SELECT count(DISTINCT file_id) FROM vault_chunks);
END $$;

UPDATE corpus_stats SET notes = (SELECT count(DISTINCT file_id) FROM vault_chunks);
