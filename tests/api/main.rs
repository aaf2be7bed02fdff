//! Black-box tests of the composed gateway: real HTTP handling, real PostgreSQL.

mod account;
mod admin_cli;
mod agents;
mod auth;
mod automations;
mod chat;
mod commerce;
mod contacts;
mod contacts_original;
mod data;
mod faults;
mod framework;
mod leads;
mod mcp;
mod openapi;
mod operations;
mod payments;
mod process;
mod rate_limit;
mod row_security;
mod scale_out;
mod secrets;
mod smoke;
mod sms;
mod voice;
mod webhooks;
