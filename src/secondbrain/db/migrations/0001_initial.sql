-- The initial schema: the vault's notes and chunks, the embedding-model record, sync runs, and the chat module.
-- Applied once, in one transaction, by secondbrain.db.migrate under an advisory lock.

CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- The embedding model the stored vectors were made with: one row. When the configured model differs,
-- ingest re-embeds everything, so vectors of two models are never compared.
CREATE TABLE embedding_model (
    singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    provider   text NOT NULL,
    name       text NOT NULL,
    dimension  integer NOT NULL CHECK (dimension > 0),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- One row per markdown note in the vault.
CREATE TABLE vault_files (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    path          text NOT NULL UNIQUE CHECK (path <> ''),
    title         text NOT NULL,
    body          text NOT NULL,
    frontmatter   jsonb NOT NULL DEFAULT '{}'::jsonb,
    aliases       text[] NOT NULL DEFAULT '{}',
    tags          text[] NOT NULL DEFAULT '{}',
    content_hash  text NOT NULL,
    mtime         timestamptz,
    -- indexed: chunked and embedded; pending: stored, not yet embedded; failed: status_reason says why.
    status        text NOT NULL DEFAULT 'pending' CHECK (status IN ('indexed', 'pending', 'failed')),
    status_reason text NOT NULL DEFAULT '',
    indexed_at    timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX vault_files_tags_idx ON vault_files USING gin (tags);
-- Substring search over titles, paths and whole notes (keyword search of the note-level search).
CREATE INDEX vault_files_title_trgm_idx ON vault_files USING gin (title gin_trgm_ops);
CREATE INDEX vault_files_path_trgm_idx ON vault_files USING gin (path gin_trgm_ops);
CREATE INDEX vault_files_body_trgm_idx ON vault_files USING gin (body gin_trgm_ops);

-- Outgoing wikilinks of each note ([[Note]], [[Note#Heading]], [[Note|alias]], ![[embed]]), kept for link expansion.
CREATE TABLE vault_links (
    file_id  bigint NOT NULL REFERENCES vault_files (id) ON DELETE CASCADE,
    ordinal  integer NOT NULL,
    target   text NOT NULL,
    heading  text NOT NULL DEFAULT '',
    alias    text NOT NULL DEFAULT '',
    is_embed boolean NOT NULL DEFAULT false,
    line     integer NOT NULL,
    PRIMARY KEY (file_id, ordinal)
);
CREATE INDEX vault_links_target_idx ON vault_links (target);

-- The unit both arms of hybrid retrieval rank.
CREATE TABLE vault_chunks (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    file_id      bigint NOT NULL REFERENCES vault_files (id) ON DELETE CASCADE,
    chunk_index  integer NOT NULL CHECK (chunk_index >= 0),
    heading_path text[] NOT NULL DEFAULT '{}',
    start_line   integer NOT NULL CHECK (start_line >= 1),
    end_line     integer NOT NULL CHECK (end_line >= start_line),
    -- "Title > Heading > Subheading" prefix and the chunk's text; the prefix is embedded too.
    content      text NOT NULL,
    -- The optional LLM-written line placing the chunk in its note; '' when enrichment is off.
    context      text NOT NULL DEFAULT '',
    token_count  integer NOT NULL CHECK (token_count >= 0),
    -- Untyped so the model (and so the dimension) can change without a schema change; see the indexes below.
    embedding    vector,
    tsv          tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, context || ' ' || content)) STORED,
    UNIQUE (file_id, chunk_index)
);
CREATE INDEX vault_chunks_tsv_idx ON vault_chunks USING gin (tsv);
-- HNSW needs a fixed dimension, and the column has none, so there is one partial expression index per supported
-- dimension (pgvector's documented way to index a column of mixed dimensions). A query names the same cast and
-- predicate, e.g. ORDER BY embedding::vector(384) <=> $1 ... WHERE vector_dims(embedding) = 384, and the planner
-- uses the index for it. Only the active model's index has rows; the others stay empty and cost nothing.
-- 384: all-MiniLM-L6-v2 (the local default); 768: nomic-embed-text, bge-base; 1024: multilingual-e5-large-instruct,
-- bge-m3, mxbai-embed-large; 1536: text-embedding-3-small. Other dimensions work by exact scan.
CREATE INDEX vault_chunks_embedding_384_idx ON vault_chunks
    USING hnsw ((embedding::vector(384)) vector_cosine_ops) WHERE vector_dims(embedding) = 384;
CREATE INDEX vault_chunks_embedding_768_idx ON vault_chunks
    USING hnsw ((embedding::vector(768)) vector_cosine_ops) WHERE vector_dims(embedding) = 768;
CREATE INDEX vault_chunks_embedding_1024_idx ON vault_chunks
    USING hnsw ((embedding::vector(1024)) vector_cosine_ops) WHERE vector_dims(embedding) = 1024;
CREATE INDEX vault_chunks_embedding_1536_idx ON vault_chunks
    USING hnsw ((embedding::vector(1536)) vector_cosine_ops) WHERE vector_dims(embedding) = 1536;

-- One row per vault sync, for the index status ("last sync") and for reading what a sync did.
CREATE TABLE ingest_runs (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    vault_path  text NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    status      text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'succeeded', 'failed', 'cancelled')),
    totals      jsonb NOT NULL DEFAULT '{}'::jsonb,
    error       text NOT NULL DEFAULT ''
);

-- Personas: the default assistant plus one per agent definition found in the vault (.claude/agents/<name>.md).
CREATE TABLE personas (
    id          text PRIMARY KEY CHECK (id <> ''),
    name        text NOT NULL,
    role        text NOT NULL DEFAULT '',
    -- Appended to the system prompt when the persona is selected; '' for the default assistant.
    definition  text NOT NULL DEFAULT '',
    -- Where the definition came from (a vault path); '' for built-in personas.
    source      text NOT NULL DEFAULT '',
    updated_at  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO personas (id, name, role) VALUES ('assistant', 'Assistant', 'Answers from your notes, citing them.');

-- The chat settings: one row. NULL means "use the default" so a changed default reaches installs that never chose.
CREATE TABLE chat_settings (
    singleton     boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    provider      text,
    model         text,
    persona_id    text REFERENCES personas (id) ON DELETE SET NULL,
    system_prompt text,
    passages      integer CHECK (passages BETWEEN 1 AND 50),
    alternates    boolean,
    rerank        boolean,
    rerank_model  text,
    updated_at    timestamptz NOT NULL DEFAULT now()
);
INSERT INTO chat_settings (singleton) VALUES (true);

CREATE TABLE chat_conversations (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    title      text NOT NULL DEFAULT '',
    persona_id text REFERENCES personas (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX chat_conversations_updated_idx ON chat_conversations (updated_at DESC, id);

CREATE TABLE chat_messages (
    -- Identity order is message order within a conversation.
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    conversation_id uuid NOT NULL REFERENCES chat_conversations (id) ON DELETE CASCADE,
    role            text NOT NULL CHECK (role IN ('user', 'assistant')),
    content         text NOT NULL,
    -- The retrieval result the answer read (queries, passages, timings, vector arm): every answer keeps its sources.
    sources         jsonb,
    provider        text NOT NULL DEFAULT '',
    model           text NOT NULL DEFAULT '',
    input_tokens    integer,
    output_tokens   integer,
    status          text NOT NULL DEFAULT 'complete' CHECK (status IN ('complete', 'incomplete')),
    error           text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX chat_messages_conversation_idx ON chat_messages (conversation_id, id);
