//! Commerce (contract: Catalogue, Product, Order, Sync report, Inventory level and movement,
//! Order status; Catalogues, products, stock, orders): shops, products, sync runs, stock with
//! reservations, and orders.

mod batch;
mod crash;
mod orders;
mod products;
mod reservations;
mod schema_rules;
mod shops;
mod stock;
mod support;
