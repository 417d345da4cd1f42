-- Lexical retrieval: BM25 over chunks in plain SQL (no extension), and a note-level tsvector for the search box.
--
-- Why BM25 and not ts_rank_cd: measured on BEIR SciFact, OR over the lexemes ranked by BM25 scores nDCG@10 0.69
-- against 0.33 for ts_rank_cd (see the retrieve issue). BM25 needs, per query lexeme, its document frequency, and per
-- chunk, the lexeme's term frequency and the chunk's length. Those live in chunk_postings, lexeme_stats and
-- corpus_stats, kept current by triggers in the same transaction as the chunks, so every write path (sync, upsert,
-- cascade deletes) keeps them exact. A query reads each of its lexemes' postings best first, by an index that holds
-- everything scoring needs (an index-only scan), and at most a few thousand of them per lexeme: a lexeme in
-- thousands of chunks has a small IDF, so its long tail barely moves any chunk's score (measured in docs/benchmarks.md).
--
-- The text search configuration is a setting (search_config; 'english' by default, 'simple' for mixed-language
-- vaults). Triggers compute every tsvector with it, and secondbrain_rebuild_lexical_index() recomputes them all
-- when it changes.

CREATE TABLE search_config (
    singleton          boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    text_search_config regconfig NOT NULL DEFAULT 'english'
);
INSERT INTO search_config DEFAULT VALUES;

CREATE FUNCTION secondbrain_ts_config() RETURNS regconfig
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT text_search_config FROM search_config $$;

-- Occurrences of lexemes (not distinct lexemes): BM25's document length.
CREATE FUNCTION tsvector_occurrences(tsvector) RETURNS integer
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT coalesce(sum(coalesce(array_length(positions, 1), 1)), 0)::integer FROM unnest($1) $$;

-- The generated column of 0001 could only use a fixed configuration; a trigger computes it from the setting.
ALTER TABLE vault_chunks DROP COLUMN tsv;
ALTER TABLE vault_chunks ADD COLUMN tsv tsvector NOT NULL DEFAULT '';
ALTER TABLE vault_chunks ADD COLUMN lexeme_count integer NOT NULL DEFAULT 0;
CREATE INDEX vault_chunks_tsv_idx ON vault_chunks USING gin (tsv);

-- Whole notes, for the note-level keyword search: title first, then aliases and tags, then the body.
ALTER TABLE vault_files ADD COLUMN tsv tsvector NOT NULL DEFAULT '';
CREATE INDEX vault_files_tsv_idx ON vault_files USING gin (tsv);

CREATE FUNCTION vault_chunks_set_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.tsv := to_tsvector(secondbrain_ts_config(), NEW.context || ' ' || NEW.content);
    NEW.lexeme_count := tsvector_occurrences(NEW.tsv);
    RETURN NEW;
END $$;
CREATE TRIGGER vault_chunks_set_tsv BEFORE INSERT OR UPDATE OF content, context ON vault_chunks
    FOR EACH ROW EXECUTE FUNCTION vault_chunks_set_tsv();

CREATE FUNCTION vault_files_set_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.tsv := setweight(to_tsvector(secondbrain_ts_config(), NEW.title), 'A')
            || setweight(to_tsvector(secondbrain_ts_config(),
                         array_to_string(NEW.aliases, ' ') || ' ' || array_to_string(NEW.tags, ' ')), 'B')
            || to_tsvector(secondbrain_ts_config(), NEW.body);
    RETURN NEW;
END $$;
CREATE TRIGGER vault_files_set_tsv BEFORE INSERT OR UPDATE OF title, body, aliases, tags ON vault_files
    FOR EACH ROW EXECUTE FUNCTION vault_files_set_tsv();

CREATE TABLE chunk_postings (
    lexeme   text NOT NULL,
    chunk_id bigint NOT NULL REFERENCES vault_chunks (id) ON DELETE CASCADE,
    tf       integer NOT NULL CHECK (tf > 0),
    -- The chunk's length, copied here so scoring a lexeme's postings reads this table alone.
    length   integer NOT NULL,
    -- BM25's term-frequency part with a fixed typical length (100 lexemes) in place of the corpus average: it only
    -- orders a lexeme's postings best first; scores use the exact formula.
    impact   real GENERATED ALWAYS AS (tf::real / (tf + 1.2 * (0.25 + 0.75 * length / 100.0))) STORED
);
-- One row per (lexeme, chunk) by construction: the postings come from a tsvector, whose lexemes are distinct.
CREATE INDEX chunk_postings_lexeme_idx ON chunk_postings (lexeme, impact DESC) INCLUDE (chunk_id, tf, length);
CREATE INDEX chunk_postings_chunk_idx ON chunk_postings (chunk_id);

CREATE TABLE lexeme_stats (
    lexeme text PRIMARY KEY,
    df     integer NOT NULL CHECK (df >= 0)
);

CREATE TABLE corpus_stats (
    singleton    boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    chunks       bigint NOT NULL DEFAULT 0,
    total_length bigint NOT NULL DEFAULT 0
);
INSERT INTO corpus_stats DEFAULT VALUES;

-- The postings of the given chunks (all chunks when NULL), from their tsvectors: the one place postings are made.
CREATE FUNCTION secondbrain_add_postings(chunk_ids bigint[]) RETURNS void LANGUAGE sql AS $$
    INSERT INTO chunk_postings (lexeme, chunk_id, tf, length)
    SELECT l.lexeme, c.id, coalesce(array_length(l.positions, 1), 1), c.lexeme_count
    FROM vault_chunks c, unnest(c.tsv) AS l
    WHERE chunk_ids IS NULL OR c.id = ANY (chunk_ids)
$$;

-- New chunks: their postings (which count their lexemes' document frequencies) and the corpus totals.
CREATE FUNCTION vault_chunks_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM secondbrain_add_postings(ARRAY(SELECT id FROM new_chunks));
    UPDATE corpus_stats SET chunks = chunks + (SELECT count(*) FROM new_chunks),
                            total_length = total_length + (SELECT coalesce(sum(lexeme_count), 0) FROM new_chunks);
    RETURN NULL;
END $$;
CREATE TRIGGER vault_chunks_after_insert AFTER INSERT ON vault_chunks
    REFERENCING NEW TABLE AS new_chunks FOR EACH STATEMENT EXECUTE FUNCTION vault_chunks_after_insert();

-- Deleted chunks (their postings go by cascade): the corpus totals.
CREATE FUNCTION vault_chunks_after_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE corpus_stats SET chunks = chunks - (SELECT count(*) FROM old_chunks),
                            total_length = total_length - (SELECT coalesce(sum(lexeme_count), 0) FROM old_chunks);
    RETURN NULL;
END $$;
CREATE TRIGGER vault_chunks_after_delete AFTER DELETE ON vault_chunks
    REFERENCING OLD TABLE AS old_chunks FOR EACH STATEMENT EXECUTE FUNCTION vault_chunks_after_delete();

-- Chunks whose text changed in place: replace their postings and adjust the totals. Updates that leave the tsvector
-- alone (a new embedding, say) change nothing here. (A statement trigger with transition tables cannot name columns,
-- hence the comparison.) The rebuild below does its own bookkeeping and switches this off for its transaction.
CREATE FUNCTION vault_chunks_after_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
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
CREATE TRIGGER vault_chunks_after_update AFTER UPDATE ON vault_chunks
    REFERENCING OLD TABLE AS old_chunks NEW TABLE AS new_chunks
    FOR EACH STATEMENT EXECUTE FUNCTION vault_chunks_after_update();

-- Document frequencies follow the postings. Lexemes are locked in sorted order so concurrent writers cannot deadlock.
CREATE FUNCTION chunk_postings_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO lexeme_stats (lexeme, df)
    SELECT lexeme, count(*) FROM new_postings GROUP BY lexeme ORDER BY lexeme
    ON CONFLICT (lexeme) DO UPDATE SET df = lexeme_stats.df + EXCLUDED.df;
    RETURN NULL;
END $$;
CREATE TRIGGER chunk_postings_after_insert AFTER INSERT ON chunk_postings
    REFERENCING NEW TABLE AS new_postings FOR EACH STATEMENT EXECUTE FUNCTION chunk_postings_after_insert();

CREATE FUNCTION chunk_postings_after_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE lexeme_stats s SET df = s.df - o.n
    FROM (SELECT lexeme, count(*) AS n FROM old_postings GROUP BY lexeme ORDER BY lexeme) o
    WHERE s.lexeme = o.lexeme;
    DELETE FROM lexeme_stats s USING (SELECT DISTINCT lexeme FROM old_postings) o
    WHERE s.lexeme = o.lexeme AND s.df <= 0;
    RETURN NULL;
END $$;
CREATE TRIGGER chunk_postings_after_delete AFTER DELETE ON chunk_postings
    REFERENCING OLD TABLE AS old_postings FOR EACH STATEMENT EXECUTE FUNCTION chunk_postings_after_delete();

-- Recompute every tsvector and the BM25 tables from scratch: after the text search configuration changes.
CREATE FUNCTION secondbrain_rebuild_lexical_index() RETURNS void LANGUAGE plpgsql AS $$
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
END $$;

SELECT secondbrain_rebuild_lexical_index();
