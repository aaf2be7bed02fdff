//! Commerce (contract: Catalogue, Product, Order, Sync report, Inventory level and movement,
//! Order status): shops and their products, sync runs, stock levels with reservations that never
//! oversell, and orders from every platform through one intake.
//!
//! ```
//! use commerce::CommerceService;
//! use commerce::catalogues::CatalogueSettings;
//! use kernel::{Caller, Clock, TenantId};
//! use store::testing::TestDb;
//!
//! tokio::runtime::Runtime::new().unwrap().block_on(async {
//!     let db = TestDb::new().await;
//!     let mut conn = store::connect_system(&db.pool()).await.unwrap();
//!     let tenant = accounts::tenants::create(&mut conn, "Duka", "TZS").await.unwrap();
//!     let caller = Caller::operator(TenantId(tenant.id), "255");
//!
//!     let commerce = CommerceService::new(db.pool(), Clock::system());
//!     let settings: CatalogueSettings = serde_json::from_str(r#"{"name": "Duka Letu"}"#).unwrap();
//!     let shop = commerce.create_catalogue(&caller, settings).await.unwrap();
//!     assert_eq!((shop.name.as_str(), shop.stock_policy.as_str()), ("Duka Letu", "external"));
//! });
//! ```
//!
//! Everything goes through [`CommerceService`], built from a pool and a clock; every method takes
//! the [`kernel::Caller`], checks its permission and scopes to its tenant. Request bodies are the
//! typed types of each module ([`catalogues::CatalogueSettings`], [`products::ProductBody`],
//! [`orders::NewOrder`], [`stock::LevelsPush`], [`sync::Batch`]): serde reads the JSON types,
//! and the service checks the limits and rules, naming every bad member at once. States are
//! enums with their transition tables in [`status`]; ids are [`CatalogueId`], [`ProductId`],
//! [`OrderId`] and [`SyncId`].

pub mod baskets;
pub mod catalogues;
pub mod drift;
pub mod events;
pub mod feeds;
pub mod orders;
pub mod products;
pub mod publish;
mod rules;
mod schema;
pub mod sends;
mod service;
pub mod status;
pub mod stock;
pub mod storefront;
pub mod sync;

pub use catalogues::Catalogue;
pub use orders::Order;
pub use products::Product;
pub use rules::{Whole, add_rules};
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
