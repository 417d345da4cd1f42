-- The work of one sync as a queue, so several ingest replicas share a large vault. The sync that walked the vault
-- enqueues the files that may have changed; every ingest process claims batches with FOR UPDATE SKIP LOCKED, so
-- each row is claimed by one worker at a time; a claim older than its lease (a worker that died) is claimed again.
-- Rows are kept with their outcome, which the sync streams back as progress; they go when their run is deleted.
CREATE TABLE ingest_queue (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id      bigint NOT NULL REFERENCES ingest_runs (id) ON DELETE CASCADE,
    vault_path  text NOT NULL,
    path        text NOT NULL,
    force       boolean NOT NULL DEFAULT false,
    state       text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'claimed', 'done')),
    claimed_by  text,
    claimed_at  timestamptz,
    claims      integer NOT NULL DEFAULT 0,
    outcome     text CHECK (outcome IN ('added', 'updated', 'unchanged', 'failed')),
    chunks      integer NOT NULL DEFAULT 0,
    embedded    integer NOT NULL DEFAULT 0,
    error       text NOT NULL DEFAULT '',
    warnings    text[] NOT NULL DEFAULT '{}',
    -- The order in which rows finished, for following a run's progress.
    done_seq    bigint,
    UNIQUE (run_id, path)
);

CREATE SEQUENCE ingest_queue_done_seq;

CREATE INDEX ingest_queue_open_idx ON ingest_queue (id) WHERE state <> 'done';
CREATE INDEX ingest_queue_done_idx ON ingest_queue (run_id, done_seq) WHERE state = 'done';
