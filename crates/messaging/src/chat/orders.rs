//! Orders customers place from the chat catalogue (an inbound `order` message): read from the
//! stored message by a job queued with it, and handed to the shop that takes them (commerce,
//! wired in by the composition root), once per message.

use std::sync::Arc;

use kernel::{Error, TenantId};
use serde::{Deserialize, Serialize};
use store::jobs::{Job, JobContext, JobError};

use crate::MessagingService;
use crate::messages::{Message, MessageRef};

/// One line of a chat order, as the customer's cart had it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatOrderItem {
    /// The product's retailer id (the shop's `sku`).
    pub retailer_id: String,
    pub quantity: i64,
}

/// An order read from an inbound `order` message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatOrder {
    pub tenant_id: TenantId,
    /// The message's uid: an order is taken once per message.
    pub message_uid: String,
    /// The provider's catalogue id the cart was filled from.
    pub catalog_id: Option<String>,
    /// The customer's chat id (the provider's `wa_id`).
    pub customer_chat_id: String,
    pub customer_name: Option<String>,
    pub conversation_id: Option<i64>,
    pub items: Vec<ChatOrderItem>,
    /// The note the customer wrote with the cart.
    pub text: Option<String>,
}

impl ChatOrder {
    /// The order an inbound `order` message carries (`None` for any other message).
    pub fn of(message: &Message) -> Option<Self> {
        let metadata = message.metadata.as_ref()?;
        let order = &metadata["message"]["order"];
        if metadata["message_type"].as_str() != Some("order") || !order.is_object() {
            return None;
        }
        let items = order["product_items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|item| {
                let quantity = match &item["quantity"] {
                    serde_json::Value::Number(n) => n.as_i64(),
                    serde_json::Value::String(s) => s.trim().parse().ok(),
                    _ => None,
                }?;
                Some(ChatOrderItem { retailer_id: item["product_retailer_id"].as_str()?.to_owned(), quantity })
            })
            .collect();
        Some(Self {
            tenant_id: TenantId(message.tenant_id),
            message_uid: message.uid.clone(),
            catalog_id: order["catalog_id"].as_str().map(str::to_owned),
            customer_chat_id: message.sender.clone().unwrap_or_default().trim_start_matches('+').to_owned(),
            customer_name: metadata["profile_name"].as_str().map(str::to_owned),
            conversation_id: message.conversation_id,
            items,
            text: order["text"].as_str().map(str::to_owned),
        })
    }
}

/// An order a menu form's answer placed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlacedOrder {
    pub order_id: i64,
    /// What the customer and the shop call it (`ORD-<id>`).
    pub order_reference: String,
    pub order_total: i64,
    pub currency: String,
}

/// Whoever takes chat orders (the shops).
#[async_trait::async_trait]
pub trait ChatOrders: Send + Sync {
    /// Takes the order; a repeat of the same message must not make a second order.
    async fn receive(&self, order: ChatOrder) -> Result<(), Error>;

    /// The published products a menu form of `shop` lists (at most 20, prices the shop's);
    /// 422 naming `menu_shop_id` when the tenant has no such shop.
    async fn menu(&self, tenant: TenantId, shop: i64) -> Result<Vec<crate::forms::MenuProduct>, Error>;

    /// Places the order of a menu form's answer at `shop` (`order.received`), once per
    /// `order.message_uid`, at the shop's prices.
    async fn place(&self, shop: i64, order: ChatOrder) -> Result<PlacedOrder, Error>;
}

/// Hands the order of an inbound message to the shops.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TakeChatOrder {
    pub tenant_id: TenantId,
    pub message_id: i64,
}

impl Job for TakeChatOrder {
    const NAME: &'static str = "messaging.take_chat_order";
    type State = MessagingService;

    async fn run(self, state: Arc<MessagingService>, _ctx: JobContext) -> Result<(), JobError> {
        let Some(shops) = state.chat_orders.clone() else {
            tracing::warn!(message = self.message_id, "a chat order arrived and nothing takes chat orders");
            return Ok(());
        };
        let mut conn = state.conn(self.tenant_id).await?;
        let message =
            crate::messages::get(&mut conn, self.tenant_id, &MessageRef::Id(crate::ids::MessageId(self.message_id)))
                .await?;
        drop(conn);
        match ChatOrder::of(&message) {
            Some(order) => shops.receive(order).await.map_err(JobError::from),
            None => Ok(()),
        }
    }
}

impl MessagingService {
    /// The products a menu form of `shop` lists, from the shops.
    pub(crate) async fn menu_products(
        &self,
        tenant: TenantId,
        shop: i64,
    ) -> Result<Vec<crate::forms::MenuProduct>, Error> {
        match &self.chat_orders {
            Some(shops) => shops.menu(tenant, shop).await,
            None => Err(Error::field("menu_shop_id", "No shop takes orders in this service.")),
        }
    }

    /// The same service, handing chat orders to `shops`.
    pub fn with_chat_orders(self, shops: Arc<dyn ChatOrders>) -> Self {
        Self { chat_orders: Some(shops), ..self }
    }
}
