DROP TABLE oauth_tokens;
DROP TABLE oauth_grants;
DROP TABLE sign_ins;
DROP TABLE oauth_clients;
DROP INDEX users_email;
ALTER TABLE users DROP COLUMN email, DROP COLUMN password_hash, DROP COLUMN failed_sign_ins,
    DROP COLUMN last_failed_sign_in_at;
