-- Leased permits for the PostgreSQL rate limiter (docs/operations.md, "Rate limiting across
-- several gateways"). A row counts `permits` accepted requests at `at`. A gateway takes a lease
-- of several permits in one statement and spends them in the process; until it settles the
-- lease, its permits sit in one row tagged `lease` at the lease's end, the latest any of them can
-- be spent, so the log never counts a request for less long than the exact log would.
ALTER TABLE rate_limit_hits
    ADD COLUMN permits INTEGER NOT NULL DEFAULT 1,
    ADD COLUMN lease BIGINT;

-- The per-request log, counting permits (the bench's raw side still calls it).
CREATE OR REPLACE FUNCTION rate_limit_hit(p_key BYTEA, p_now TIMESTAMPTZ, p_window INTERVAL, p_limit INTEGER)
RETURNS TABLE (allowed BOOLEAN, used INTEGER, oldest TIMESTAMPTZ)
LANGUAGE plpgsql AS $$
DECLARE
    n INTEGER;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(encode(p_key, 'hex'), 0));
    DELETE FROM rate_limit_hits h WHERE h.key_hash = p_key AND h.at <= p_now - p_window;
    SELECT coalesce(sum(h.permits), 0) INTO n FROM rate_limit_hits h WHERE h.key_hash = p_key;
    IF n < p_limit THEN
        INSERT INTO rate_limit_hits (key_hash, at) VALUES (p_key, p_now);
        allowed := true;
        used := n + 1;
    ELSE
        allowed := false;
        used := n;
    END IF;
    SELECT min(h.at) INTO oldest FROM rate_limit_hits h WHERE h.key_hash = p_key;
    IF random() < 0.001 THEN
        DELETE FROM rate_limit_hits h WHERE h.at <= p_now - p_window;
    END IF;
    RETURN NEXT;
END
$$;

-- One statement per lease, serialized per token by an advisory lock: first settle the caller's
-- ended leases (their row gives way to the times their permits were spent), then forget what
-- aged out, then grant up to an eighth of what is free (at most p_max), so that other gateways
-- find the rest and a token near its limit is checked request by request. `oldest` ignores the
-- new lease (its permit is spent at p_now); NULL when nothing else counts.
CREATE FUNCTION rate_limit_lease(
    p_key BYTEA, p_now TIMESTAMPTZ, p_window INTERVAL, p_limit INTEGER, p_max INTEGER,
    p_lease BIGINT, p_until TIMESTAMPTZ, p_settled BIGINT[], p_spent_at TIMESTAMPTZ[], p_spent INTEGER[]
)
RETURNS TABLE (granted INTEGER, used INTEGER, oldest TIMESTAMPTZ)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(encode(p_key, 'hex'), 0));
    IF cardinality(p_settled) > 0 THEN
        DELETE FROM rate_limit_hits h WHERE h.key_hash = p_key AND h.lease = ANY (p_settled);
        INSERT INTO rate_limit_hits (key_hash, at, permits)
            SELECT p_key, s.spent_at, s.spent FROM unnest(p_spent_at, p_spent) AS s (spent_at, spent)
            WHERE s.spent > 0;
    END IF;
    DELETE FROM rate_limit_hits h WHERE h.key_hash = p_key AND h.at <= p_now - p_window;
    SELECT coalesce(sum(h.permits), 0)::INTEGER INTO used FROM rate_limit_hits h WHERE h.key_hash = p_key;
    granted := least(p_max, (greatest(p_limit - used, 0) + 7) / 8);
    IF granted > 0 THEN
        INSERT INTO rate_limit_hits (key_hash, at, permits, lease) VALUES (p_key, p_until, granted, p_lease);
        used := used + granted;
    END IF;
    SELECT min(h.at) INTO oldest FROM rate_limit_hits h
        WHERE h.key_hash = p_key AND h.lease IS DISTINCT FROM p_lease;
    -- Now and then, forget tokens that went quiet, so the table stays small.
    IF random() < 0.001 THEN
        DELETE FROM rate_limit_hits h WHERE h.at <= p_now - p_window;
    END IF;
    RETURN NEXT;
END
$$;
