DELETE FROM provider_callbacks WHERE kind = 'chat';
ALTER TABLE provider_callbacks DROP CONSTRAINT provider_callbacks_kind_check,
    ADD CONSTRAINT provider_callbacks_kind_check CHECK (kind IN ('delivery', 'inbound'));
DROP INDEX messages_chat_echo_once;
DROP INDEX messages_conversation;
ALTER TABLE messages DROP COLUMN conversation_id;
DROP TABLE chat_templates;
DROP TABLE conversations;
DROP TABLE chat_phone_numbers;
DROP TABLE chat_accounts;
ALTER TABLE channels DROP CONSTRAINT channels_provider_check,
    ADD CONSTRAINT channels_provider_check CHECK (provider IN ('sandbox', 'africastalking'));
