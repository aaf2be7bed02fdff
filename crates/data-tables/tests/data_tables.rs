//! Data tables against a real database, through the service: the column limits, a record
//! written and found again by a filter, and tenant isolation.

mod data_tables {
    pub mod rules;
    pub mod support;
}
