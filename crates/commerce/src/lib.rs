//! Commerce (contract: Catalogue, Product, Order, Sync report, Inventory level and movement,
//! Order status): shops and their products, sync runs, stock levels with reservations that never
//! oversell, and orders from every platform through one intake.

pub mod catalogues;
pub mod events;
mod fields;
pub mod orders;
pub mod products;
mod schema;
mod service;
pub mod stock;
pub mod sync;

pub use catalogues::Catalogue;
pub use orders::Order;
pub use products::Product;
pub use service::CommerceService;
