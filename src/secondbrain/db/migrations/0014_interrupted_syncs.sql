-- A sync whose process died (kill -9, out of memory, a lost node) never recorded how it ended, so its run stayed
-- 'running' for ever and the index status could not tell it from a sync in progress. A sync holds the sync lock (a
-- session-level advisory lock) from before its run starts until after it is recorded, so a run still 'running' while
-- nobody holds the lock belongs to a process that is gone: whoever takes the lock next (a new sync, an ingest process
-- starting) marks it 'interrupted'.
ALTER TABLE ingest_runs DROP CONSTRAINT ingest_runs_status_check;
ALTER TABLE ingest_runs
    ADD CONSTRAINT ingest_runs_status_check
    CHECK (status IN ('running', 'succeeded', 'failed', 'cancelled', 'interrupted'));
