//! Commerce's own rules, against a real PostgreSQL database per test through the service API
//! (`DATABASE_URL` names the cluster's maintenance database; `cargo xtask test` sets it).

#[path = "commerce/common.rs"]
mod common;
#[path = "commerce/orders.rs"]
mod orders;
#[path = "commerce/shops.rs"]
mod shops;
#[path = "commerce/stock.rs"]
mod stock;
