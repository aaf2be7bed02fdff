//! Commerce (contract: Catalogue, Product, Order, Sync report, Inventory level and movement,
//! Order status): shops and their products, sync runs, stock levels with reservations that never
//! oversell, and orders from every platform through one intake.

pub mod catalogues;
pub mod events;
pub mod orders;
pub mod products;
mod rules;
mod schema;
mod service;
pub mod status;
pub mod stock;
pub mod sync;

pub use catalogues::Catalogue;
pub use orders::Order;
pub use products::Product;
pub use rules::Whole;
pub use service::CommerceService;
pub use status::{Hold, OrderStatus, SyncStatus};

kernel::id!(
    /// A shop (contract: Catalogue); numeric.
    CatalogueId: i64
);
kernel::id!(
    /// A product of a shop; numeric (a path may name it by code instead, `by-sku/{sku}`).
    ProductId: i64
);
kernel::id!(
    /// An order; numeric.
    OrderId: i64
);
kernel::id!(
    /// A sync run; numeric.
    SyncId: i64
);
