ALTER TABLE orders DROP COLUMN payment_status;
DROP TABLE ledger_entries;
DROP TABLE payment_timeline;
DROP TABLE payments;
DROP SEQUENCE payment_references;
