//! Data tables (contract: Data table, column and record; Data record status fields; Data
//! tables; the data rows of Errors, Limits and Authentication): account-defined tables, their
//! records, filter trees, cursors, state machines and history.

mod access;
mod admin;
mod demo;
mod files;
mod groups;
mod history;
mod kit;
mod listing;
mod quota;
mod records;
mod schema;
mod states;
mod support;
mod uniques;
mod values;
