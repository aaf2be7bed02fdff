//! The chat catalogue interface, shaped like the WhatsApp Cloud API's commerce: a business
//! account's product catalogue, its items upserted in batches by retailer id (with the
//! provider's per-item refusals), read back for drift checks, and deleted.

use serde::{Deserialize, Serialize};

use crate::sms::SendError;

/// Items in one batch request (the Cloud API's `items_batch` limit).
pub const MAX_BATCH: usize = 5_000;

/// A product as the chat catalogue holds it. Prices are whole minor units of `currency`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogueItem {
    /// The shop's `sku`.
    pub retailer_id: String,
    pub name: String,
    pub description: Option<String>,
    pub price_minor: i64,
    pub sale_price_minor: Option<i64>,
    /// ISO 4217.
    pub currency: String,
    /// `in stock`, `out of stock`, `preorder`, `discontinued`...
    pub availability: String,
    pub image_url: Option<String>,
    pub brand: Option<String>,
    pub category: Option<String>,
    /// On hand, when the shop tracks stock.
    pub inventory: Option<i32>,
}

/// The provider's answer for one item of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemOutcome {
    Accepted,
    /// The provider will not show it; the reason is the provider's own words.
    Refused {
        reason: String,
    },
}

/// Why a catalogue call did not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogueError {
    /// The provider answered and said no (its error object); the reason is its own words.
    #[error("the provider refused: {reason}")]
    Refused { reason: String },
    /// No usable answer: timeout, transport, a 5xx or throttling, an unreadable body.
    #[error(transparent)]
    Failed(#[from] SendError),
}

/// A chat catalogue (the Cloud API's commerce, or the sandbox that behaves like it).
#[async_trait::async_trait]
pub trait CatalogueGateway: Send + Sync {
    /// Creates a catalogue owned by the business account and connects it to the account;
    /// answers the provider's catalogue id.
    async fn create_catalogue(&self, waba_id: &str, name: &str) -> Result<String, CatalogueError>;

    /// Connects an existing catalogue (adopted by its id) to the business account. Connecting
    /// one already connected is not an error; an unknown catalogue is `Refused`.
    async fn connect_catalogue(&self, waba_id: &str, catalogue_id: &str) -> Result<(), CatalogueError>;

    /// Creates or replaces the items by retailer id (at most [`MAX_BATCH`]); one outcome per
    /// item, in order. A refusal of the whole request is an error.
    async fn upsert_items(
        &self,
        catalogue_id: &str,
        items: &[CatalogueItem],
    ) -> Result<Vec<ItemOutcome>, CatalogueError>;

    /// Deletes the items by retailer id; deleting an item the catalogue lacks is not an error.
    async fn delete_items(&self, catalogue_id: &str, retailer_ids: &[String]) -> Result<(), CatalogueError>;

    /// The items the catalogue holds of these retailer ids (those it lacks are left out).
    async fn items(&self, catalogue_id: &str, retailer_ids: &[String]) -> Result<Vec<CatalogueItem>, CatalogueError>;
}
