DROP TABLE tenant_modules;
DROP TABLE wallet_ledger;
DROP TABLE wallets;
DROP TABLE api_keys;
DROP TABLE users;
DROP TABLE tenants;
