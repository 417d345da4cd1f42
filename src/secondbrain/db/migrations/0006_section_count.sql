-- The number of heading sections, beside the chunk count in corpus_stats. The lexical arm scores each chunk's
-- section too (BM25 over the section's chunks as one text), which needs the average section length,
-- total_length / sections. A section is a note's chunks under one heading path; a note without headings is one.
--
-- Kept by the same statement triggers as the chunk totals, so every write path keeps it exact: a section counts from
-- the statement that writes its first chunk and stops counting with the statement that deletes its last.

ALTER TABLE corpus_stats ADD COLUMN sections bigint NOT NULL DEFAULT 0;

CREATE OR REPLACE FUNCTION vault_chunks_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM secondbrain_add_postings(ARRAY(SELECT id FROM new_chunks));
    UPDATE corpus_stats SET chunks = chunks + (SELECT count(*) FROM new_chunks),
                            total_length = total_length + (SELECT coalesce(sum(lexeme_count), 0) FROM new_chunks),
                            -- A section is new when every chunk it has now came in this statement.
                            sections = sections + (
                                SELECT count(*) FROM (
                                    SELECT file_id, heading_path, count(*) AS added FROM new_chunks GROUP BY 1, 2
                                ) n
                                WHERE n.added = (SELECT count(*) FROM vault_chunks c
                                                 WHERE c.file_id = n.file_id AND c.heading_path = n.heading_path));
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION vault_chunks_after_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE corpus_stats SET chunks = chunks - (SELECT count(*) FROM old_chunks),
                            total_length = total_length - (SELECT coalesce(sum(lexeme_count), 0) FROM old_chunks),
                            sections = sections - (
                                SELECT count(*) FROM (SELECT DISTINCT file_id, heading_path FROM old_chunks) o
                                WHERE NOT EXISTS (SELECT 1 FROM vault_chunks c
                                                  WHERE c.file_id = o.file_id AND c.heading_path = o.heading_path));
    RETURN NULL;
END $$;

-- All sections, counted from scratch: after an update that moves chunks between sections, and on a rebuild.
CREATE FUNCTION secondbrain_count_sections() RETURNS void LANGUAGE sql AS $$
    UPDATE corpus_stats SET sections = (SELECT count(*) FROM (SELECT DISTINCT file_id, heading_path FROM vault_chunks) s)
$$;

CREATE OR REPLACE FUNCTION vault_chunks_after_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Nothing in secondbrain moves a chunk to another section in place (a note's chunks are replaced), but if a
    -- statement does, the count is taken again rather than left wrong.
    IF EXISTS (SELECT 1 FROM new_chunks n JOIN old_chunks o ON o.id = n.id
               WHERE (n.file_id, n.heading_path) IS DISTINCT FROM (o.file_id, o.heading_path)) THEN
        PERFORM secondbrain_count_sections();
    END IF;
    IF current_setting('secondbrain.rebuilding_lexical_index', true) = 'on' THEN
        RETURN NULL;
    END IF;
    DELETE FROM chunk_postings p USING old_chunks o, new_chunks n
    WHERE p.chunk_id = o.id AND n.id = o.id AND n.tsv IS DISTINCT FROM o.tsv;
    PERFORM secondbrain_add_postings(ARRAY(
        SELECT n.id FROM new_chunks n JOIN old_chunks o ON o.id = n.id WHERE n.tsv IS DISTINCT FROM o.tsv));
    UPDATE corpus_stats SET total_length = total_length + (
        SELECT coalesce(sum(n.lexeme_count - o.lexeme_count), 0)
        FROM new_chunks n JOIN old_chunks o ON o.id = n.id WHERE n.tsv IS DISTINCT FROM o.tsv);
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
                            total_length = (SELECT coalesce(sum(lexeme_count), 0) FROM vault_chunks);
    PERFORM secondbrain_count_sections();
END $$;

SELECT secondbrain_count_sections();
