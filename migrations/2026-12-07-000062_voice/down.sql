DROP TABLE calls;
DROP TABLE voice_rates;
DELETE FROM channels WHERE kind = 'voice';
ALTER TABLE channels DROP CONSTRAINT channels_kind_check,
    ADD CONSTRAINT channels_kind_check CHECK (kind IN ('sms', 'chat'));
