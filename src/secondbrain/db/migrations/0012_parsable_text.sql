-- PostgreSQL's text search parser takes time quadratic in the length of a run without whitespace that it may read as
-- a host, an e-mail address or a file name (`a_b_a_b...`, `a-b.a-b....`): a note of 80 KB of one took a minute of a
-- database core and then failed, and a question of 8,000 characters 0.6 s. Every text given to the parser (chunks,
-- notes, questions, search box queries) now goes through secondbrain_parsable, which puts a space after each 100
-- characters of such a run: no word a person searches for is that long, and the parse becomes linear (80 KB of the
-- worst runs: 0.08 s).
CREATE FUNCTION secondbrain_parsable(text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT regexp_replace($1, '\S{100}', '\& ', 'g') $$;

CREATE OR REPLACE FUNCTION vault_chunks_set_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.tsv := to_tsvector(secondbrain_ts_config(), secondbrain_parsable(NEW.context || ' ' || NEW.content));
    NEW.lexeme_count := tsvector_occurrences(NEW.tsv);
    RETURN NEW;
END $$;

CREATE OR REPLACE FUNCTION vault_files_set_tsv() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.tsv := setweight(to_tsvector(secondbrain_ts_config(), secondbrain_parsable(NEW.title)), 'A')
            || setweight(to_tsvector(secondbrain_ts_config(), secondbrain_parsable(
                         array_to_string(NEW.aliases, ' ') || ' ' || array_to_string(NEW.tags, ' '))), 'B')
            || to_tsvector(secondbrain_ts_config(), secondbrain_parsable(NEW.body));
    RETURN NEW;
END $$;

-- Only texts with such a run index differently: parse those again (the update triggers keep the BM25 tables exact).
UPDATE vault_chunks SET context = context WHERE context || ' ' || content ~ '\S{100}';
UPDATE vault_files SET title = title
WHERE title || ' ' || body || ' ' || array_to_string(aliases, ' ') || ' ' || array_to_string(tags, ' ') ~ '\S{100}';
