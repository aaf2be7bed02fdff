DROP FUNCTION rate_limit_hit;
DROP TABLE rate_limit_hits;
DROP TABLE idempotency_keys;
DROP TABLE events;
DROP TABLE jobs;
