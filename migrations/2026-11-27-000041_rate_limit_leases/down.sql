DROP FUNCTION rate_limit_lease(BYTEA, TIMESTAMPTZ, INTERVAL, INTEGER, INTEGER, BIGINT, TIMESTAMPTZ, BIGINT[], TIMESTAMPTZ[], INTEGER[]);
DELETE FROM rate_limit_hits WHERE lease IS NOT NULL OR permits <> 1;
ALTER TABLE rate_limit_hits DROP COLUMN lease, DROP COLUMN permits;

CREATE OR REPLACE FUNCTION rate_limit_hit(p_key BYTEA, p_now TIMESTAMPTZ, p_window INTERVAL, p_limit INTEGER)
RETURNS TABLE (allowed BOOLEAN, used INTEGER, oldest TIMESTAMPTZ)
LANGUAGE plpgsql AS $$
DECLARE
    n INTEGER;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(encode(p_key, 'hex'), 0));
    DELETE FROM rate_limit_hits h WHERE h.key_hash = p_key AND h.at <= p_now - p_window;
    SELECT count(*) INTO n FROM rate_limit_hits h WHERE h.key_hash = p_key;
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
