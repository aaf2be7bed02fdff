DELETE FROM wallet_ledger WHERE kind = 'refund';
ALTER TABLE wallet_ledger DROP CONSTRAINT wallet_ledger_kind_check;
ALTER TABLE wallet_ledger ADD CONSTRAINT wallet_ledger_kind_check CHECK (kind IN ('credit', 'debit'));
DROP FUNCTION IF EXISTS channel_take;
DROP TABLE IF EXISTS channel_usage, provider_callbacks, sms_blacklist, messages, campaigns, sms_rates, senders, channels;
