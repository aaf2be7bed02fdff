//! Commerce (contract: Catalogue, Product, Order, Sync report, Inventory level and movement,
//! Order status; Catalogues, products, stock, orders): shops, products, sync runs, stock with
//! reservations, and orders.

mod baskets;
mod batch;
mod crash;
mod feeds;
mod orders;
mod products;
mod publishing;
mod reservations;
mod schema_rules;
mod sends;
mod shops;
mod stock;
pub(crate) mod support;
