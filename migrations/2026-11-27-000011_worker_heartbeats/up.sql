-- Crash recovery in seconds (issue 14, section 6): every process that runs jobs keeps a
-- heartbeat here. Global, like `jobs`: a process serves every tenant.
CREATE TABLE workers (
    id            UUID PRIMARY KEY,
    host          TEXT,
    pid           INTEGER,
    started_at    TIMESTAMPTZ NOT NULL,
    last_seen_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX workers_last_seen ON workers (last_seen_at);

-- The process that moved a message to `processing` (its `workers` id): once that process's
-- heartbeat stops, the message's send outcome is unknown and it is failed, never resent.
ALTER TABLE messages ADD COLUMN claimed_by UUID;

-- Leases are renewed by the holder's heartbeat: found by holder.
CREATE INDEX jobs_locked_by ON jobs (locked_by) WHERE state = 'running';
