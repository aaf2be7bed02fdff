DROP INDEX IF EXISTS messages_inbound_once;
