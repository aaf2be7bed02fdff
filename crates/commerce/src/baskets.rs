//! Shop links and baskets (contract: Basket (cart), Shop links and baskets, `cart.submitted`,
//! `cart.abandoned`). A shop link is a basket the business prepares (a product, a category's
//! products, or lines with variants, add-ons and notes) and, when it names a customer whose
//! 24-hour window is open, sends them in the chat. The customer opens the basket's public page,
//! sets the quantities and submits it: an order is taken (platform `chat` when the basket came
//! from a conversation, `storefront` otherwise) and the basket is `ordered`.
//!
//! Statuses: `open` (made, not sent), `sent`, `ordered`, `abandoned` (sent in a chat, with items,
//! and not submitted within [`ABANDON_AFTER`]: `cart.abandoned`; it can still be submitted until
//! it expires), `expired` ([`EXPIRE_AFTER`] after it was made, unless ordered: the page no longer
//! takes it).

use std::collections::HashMap;
use std::sync::Arc;

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Caller, Error, Page, PageRequest, Permission, TenantId};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use store::jobs::{Enqueue, Job, JobContext, JobError};
use time::{Duration, OffsetDateTime};
use utoipa::{IntoParams, ToSchema};

use crate::CatalogueId;
use crate::catalogues::Row as Shop;
use crate::orders::{IntakeLine, Order, OrderIntake};
use crate::products::{Product, views};
use crate::rules::{Whole, choice};
use crate::schema::{carts, catalogue_categories, catalogues, products};
use crate::service::{CommerceService, shop_of};

/// A basket sent in a chat and left with items this long is abandoned.
pub const ABANDON_AFTER: Duration = Duration::hours(24);
/// A basket not ordered this long after it was made expires.
pub const EXPIRE_AFTER: Duration = Duration::days(7);
/// Lines in one basket.
pub const MAX_ITEMS: usize = 50;
/// Units of one line.
pub const MAX_QUANTITY: i64 = 1_000;
/// Products a category link offers on the page.
pub const MAX_OFFER: i64 = 100;
pub const PER_PAGE: i64 = 25;
pub const STATUSES: &[&str] = &["open", "sent", "ordered", "abandoned", "expired"];
/// Letters and digits people can read out: no 0/O, no 1/I.
const CODE_ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

choice! {
    /// A basket's status.
    CartStatus = STATUSES;
}

/// A category named by its id or by its name (or the name's slug).
#[derive(Debug, Clone, PartialEq, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum CategoryRef {
    Id(i64),
    Name(String),
}

/// One line of a shop link.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct LinkItem {
    /// The product's code (required; `retailer_id` is read when it is left out).
    #[schema(max_length = 100)]
    pub sku: Option<String>,
    #[schema(max_length = 100)]
    pub retailer_id: Option<String>,
    /// The variant the customer wants (free text, e.g. `500g` or `red / XL`), at most 100.
    #[schema(max_length = 100)]
    pub variant: Option<String>,
    /// Add-ons, at most 10 of at most 100 characters each.
    #[schema(max_items = 10)]
    pub addons: Option<Vec<String>>,
    /// 1 to 1,000; default 1.
    #[schema(value_type = Option<i64>, minimum = 1, maximum = 1000)]
    pub quantity: Option<Whole>,
    /// At most 500.
    #[schema(max_length = 500)]
    pub note: Option<String>,
}

/// `POST /shop-links`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct ShopLink {
    /// The shop; may be left out when the account has one shop.
    pub catalogue_id: Option<i64>,
    /// A category by id, or by name or slug (`"Hot drinks"` or `"hot-drinks"`): the page offers
    /// its products.
    pub category: Option<CategoryRef>,
    /// One product: the page offers it (and, without `items`, the basket holds one).
    #[schema(max_length = 100)]
    pub sku: Option<String>,
    /// At most 50 lines; lines whose product is unknown are left out and listed in `problems`.
    #[schema(max_items = 50)]
    pub items: Option<Vec<LinkItem>>,
    /// The basket's note, at most 1,000.
    #[schema(max_length = 1000)]
    pub note: Option<String>,
    /// Send the link in this conversation (needs `communications.send`; 409 outside the
    /// 24-hour window).
    pub conversation_id: Option<i64>,
    /// Or to this customer's number (their newest conversation).
    #[schema(max_length = 32)]
    pub to: Option<String>,
    /// The text sent with the link, at most 1,024; default `Your basket at <shop>: <link>`.
    #[schema(max_length = 1024)]
    pub message: Option<String>,
}

/// One line of a basket (contract: Basket `items[]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BasketItem {
    pub sku: String,
    pub name: String,
    pub variant: Option<String>,
    /// The add-ons.
    pub options: Vec<String>,
    pub note: Option<String>,
    pub quantity: i32,
    /// The sale price when there is one, else the price (as the order prices it); minor units.
    pub unit_price_minor: i64,
    pub line_total_minor: i64,
    pub currency: String,
}

/// A basket: the same shape in the API, webhooks and MCP.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Basket {
    pub id: i64,
    /// The five-character reference (`GET /carts/{ref}`).
    pub code: String,
    pub catalogue_id: i64,
    #[schema(value_type = CartStatus)]
    pub status: String,
    pub items: Vec<BasketItem>,
    pub subtotal_minor: i64,
    pub currency: String,
    pub note: Option<String>,
    /// The category the link offers, as sent.
    pub category: Option<String>,
    pub conversation_id: Option<i64>,
    /// The customer's number, when the basket was sent to one.
    pub customer: Option<String>,
    /// The chat message that carried the link (its `uid`).
    pub message_id: Option<String>,
    /// Once ordered.
    pub order_id: Option<i64>,
    /// The public basket page.
    pub url: String,
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub submitted_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// A line of a link that is not in the basket.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct LinkProblem {
    pub sku: Option<String>,
    pub reason: String,
}

/// The answer of `POST /shop-links`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct LinkAnswer {
    /// The basket page.
    pub url: String,
    /// Whether the link was sent in the chat.
    pub sent: bool,
    /// Why a send the provider refused did not go (the basket stays `open`).
    pub send_error: Option<String>,
    pub problems: Vec<LinkProblem>,
    pub cart: Basket,
}

/// `GET /carts` filters.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CartFilter {
    #[param(value_type = Option<CartStatus>, inline)]
    pub status: Option<String>,
    /// Read as text, as a query string carries it (MCP passes its arguments the same way).
    #[param(value_type = Option<i64>)]
    pub conversation_id: Option<String>,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = carts)]
struct Row {
    id: i64,
    tenant_id: i64,
    catalogue_id: i64,
    code: String,
    token: String,
    status: String,
    items: Value,
    offer: Vec<i64>,
    subtotal_minor: i64,
    currency: String,
    note: Option<String>,
    category: Option<String>,
    conversation_id: Option<i64>,
    customer: Option<String>,
    message_id: Option<String>,
    order_id: Option<i64>,
    expires_at: OffsetDateTime,
    submitted_at: Option<OffsetDateTime>,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
}

/// The basket page's address.
pub fn url(public_url: &str, token: &str) -> String {
    format!("{}/basket/{token}", public_url.trim_end_matches('/'))
}

impl Row {
    fn view(self, public_url: &str) -> Basket {
        Basket {
            id: self.id,
            url: url(public_url, &self.token),
            code: self.code,
            catalogue_id: self.catalogue_id,
            status: self.status,
            items: serde_json::from_value(self.items).unwrap_or_default(),
            subtotal_minor: self.subtotal_minor,
            currency: self.currency,
            note: self.note,
            category: self.category,
            conversation_id: self.conversation_id,
            customer: self.customer,
            message_id: self.message_id,
            order_id: self.order_id,
            expires_at: self.expires_at,
            submitted_at: self.submitted_at,
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

/// A basket's page, as the customer sees it.
#[derive(Debug, Clone)]
pub struct BasketPage {
    /// Whose basket it is (the gateway asks payments for the order's checkout with it).
    pub tenant_id: TenantId,
    pub shop: String,
    pub basket: Basket,
    /// What the customer may add (a category's products, the linked one), with prices.
    pub offer: Vec<Product>,
}

/// What the customer submits from the page: a quantity per code (0 leaves it out).
#[derive(Debug, Clone, Default)]
pub struct Submission {
    pub quantities: Vec<(String, i64)>,
    pub customer_name: Option<String>,
}

/// Ends a basket's time: abandons a sent one left with items, expires one never ordered.
#[derive(Debug, Serialize, Deserialize)]
pub struct BasketTimeout {
    pub cart_id: i64,
}

impl Job for BasketTimeout {
    const NAME: &'static str = "commerce.basket_timeout";
    const MAX_ATTEMPTS: i32 = 5;
    type State = CommerceService;

    async fn run(self, service: Arc<CommerceService>, ctx: JobContext) -> Result<(), JobError> {
        service.basket_timeout(ctx.tenant()?, self.cart_id).await?;
        Ok(())
    }
}

/// `Hot Drinks` and `hot-drinks` name the same category.
fn slug(name: &str) -> String {
    let mut out = String::new();
    for word in name.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        if !out.is_empty() {
            out.push('-');
        }
        out.push_str(&word.to_lowercase());
    }
    out
}

fn random_code() -> String {
    let bytes = uuid::Uuid::new_v4().into_bytes();
    bytes[..5].iter().map(|b| CODE_ALPHABET[usize::from(*b) % CODE_ALPHABET.len()] as char).collect()
}

/// The checked lines of a link: `(sku, variant, options, note, quantity)`.
type Wanted = (String, Option<String>, Vec<String>, Option<String>, i32);

fn check_link(body: &ShopLink) -> Result<Vec<Wanted>, Error> {
    let mut errors = kernel::error::FieldErrors::new();
    let long = |errors: &mut kernel::error::FieldErrors, key: &str, value: &Option<String>, max: usize| {
        if value.as_ref().is_some_and(|v| v.chars().count() > max) {
            errors.add(key, format!("The {key} may not be greater than {max} characters."));
        }
    };
    long(&mut errors, "note", &body.note, 1_000);
    long(&mut errors, "message", &body.message, 1_024);
    long(&mut errors, "sku", &body.sku, 100);
    let items = body.items.clone().unwrap_or_default();
    if items.len() > MAX_ITEMS {
        errors.add("items", format!("A basket holds at most {MAX_ITEMS} lines."));
    }
    if body.category.is_none() && body.sku.is_none() && items.is_empty() {
        errors.add("items", "Name what the link offers: a category, a sku or items.");
    }
    if body.conversation_id.is_some() && body.to.is_some() {
        errors.add("to", "Name the customer once: conversation_id or to.");
    }
    let mut wanted = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let key = |member: &str| format!("items.{i}.{member}");
        let sku = item.sku.clone().or_else(|| item.retailer_id.clone()).map(|s| s.trim().to_owned());
        match &sku {
            None => errors.add(key("sku"), "The sku field is required."),
            Some(s) if s.is_empty() || s.chars().count() > 100 => {
                errors.add(key("sku"), "The sku must be 1 to 100 characters.")
            }
            _ => {}
        }
        long(&mut errors, &key("variant"), &item.variant, 100);
        long(&mut errors, &key("note"), &item.note, 500);
        let addons = item.addons.clone().unwrap_or_default();
        if addons.len() > 10 || addons.iter().any(|a| a.chars().count() > 100 || a.trim().is_empty()) {
            errors.add(key("addons"), "At most 10 add-ons of 1 to 100 characters each.");
        }
        let quantity = match &item.quantity {
            None => 1,
            Some(q) => match q.0 {
                Some(q) if (1..=MAX_QUANTITY).contains(&q) => q as i32,
                _ => {
                    errors
                        .add(key("quantity"), format!("The quantity must be a whole number from 1 to {MAX_QUANTITY}."));
                    1
                }
            },
        };
        if let Some(sku) = sku {
            wanted.push((sku, item.variant.clone(), addons, item.note.clone(), quantity));
        }
    }
    errors.finish()?;
    Ok(wanted)
}

impl CommerceService {
    /// `POST /shop-links`: makes the basket and, when a customer is named, sends its link in the
    /// chat (nothing is made when their window is closed).
    pub async fn create_shop_link(&self, caller: &Caller, body: ShopLink) -> Result<LinkAnswer, Error> {
        caller.require(Permission::CATALOGUE_VIEW)?;
        let recipient = body.conversation_id.is_some() || body.to.is_some();
        if recipient {
            caller.require(Permission::SEND)?;
        }
        let wanted = check_link(&body)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        let shop = match body.catalogue_id {
            Some(id) => shop_of(&mut conn, caller.tenant_id, CatalogueId(id)).await?,
            None => only_shop(&mut conn, caller.tenant_id).await?,
        };
        let (offer, category) = offer(&mut conn, &shop, &body).await?;
        let window = match recipient {
            true => {
                let messaging = self
                    .messaging
                    .as_ref()
                    .ok_or_else(|| Error::validation("No chat account is configured for this account."))?;
                Some(messaging.open_window(caller, body.conversation_id, body.to.as_deref()).await?)
            }
            false => None,
        };
        // without lines, a link to one product holds one of it
        let wanted = match (&body.sku, wanted.is_empty()) {
            (Some(sku), true) => vec![(sku.trim().to_owned(), None, Vec::new(), None, 1)],
            _ => wanted,
        };
        let (items, problems) = price(&mut conn, &shop, &wanted).await?;
        let currency = match <[_]>::first(&items) {
            Some(item) => item.currency.clone(),
            None => crate::products::default_currency(&mut conn, &shop).await?,
        };
        let subtotal: i64 = items.iter().map(|i| i.line_total_minor).sum();
        let now = self.clock.now();
        let token = format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
        let row = loop {
            let code = random_code();
            let made = conn
                .transaction::<_, Error, _>(async |conn| {
                    let row: Row = diesel::insert_into(carts::table)
                        .values((
                            carts::tenant_id.eq(shop.tenant_id),
                            carts::catalogue_id.eq(shop.id),
                            carts::code.eq(&code),
                            carts::token.eq(&token),
                            carts::status.eq("open"),
                            carts::items.eq(json!(items)),
                            carts::offer.eq(&offer),
                            carts::subtotal_minor.eq(subtotal),
                            carts::currency.eq(&currency),
                            carts::note.eq(&body.note),
                            carts::category.eq(&category),
                            carts::problems.eq(json!(problems)),
                            carts::conversation_id.eq(window.as_ref().map(|w| w.conversation_id)),
                            carts::customer.eq(window.as_ref().map(|w| w.customer.clone())),
                            carts::expires_at.eq(now + EXPIRE_AFTER),
                            carts::created_at.eq(now),
                            carts::updated_at.eq(now),
                        ))
                        .returning(Row::as_returning())
                        .get_result(conn)
                        .await
                        .map_err(|e| match store::is_unique_violation(&e, None) {
                            true => Error::conflict("code taken"),
                            false => e.into(),
                        })?;
                    let tenant = Some(TenantId(shop.tenant_id));
                    let at = |at| Enqueue { tenant_id: tenant, run_at: Some(at), ..Enqueue::default() };
                    let timeout = BasketTimeout { cart_id: row.id };
                    store::jobs::enqueue(conn, &timeout, at(row.expires_at)).await?;
                    if row.conversation_id.is_some() {
                        store::jobs::enqueue(conn, &timeout, at(now + ABANDON_AFTER)).await?;
                    }
                    Ok(row)
                })
                .await;
            match made {
                // five characters from 32: a clash is rare, and another draw settles it
                Err(e) if e.is(kernel::ErrorKind::Conflict) => continue,
                other => break other?,
            }
        };
        drop(conn);
        let link = url(&self.public_url, &row.token);
        let Some(window) = window else {
            return Ok(LinkAnswer {
                url: link,
                sent: false,
                send_error: None,
                problems,
                cart: row.view(&self.public_url),
            });
        };
        let text = match &body.message {
            Some(message) if message.contains(&link) => message.clone(),
            Some(message) => format!("{message}\n{link}"),
            None => format!("Your basket at {}: {link}", shop.name),
        };
        let messaging = self.messaging.as_ref().expect("checked above");
        let request = messaging::chat::ChatSendRequest {
            recipient: Some(window.customer.clone()),
            sender_id: Some(window.phone_number_id.clone()),
            message_type: Some("text".to_owned()),
            message: Some(text),
            ..Default::default()
        };
        let sent = messaging.send_chat(caller, request).await?;
        let message = sent.messages.into_iter().next();
        let refused = message
            .as_ref()
            .filter(|m| m.status == "failed")
            .map(|m| m.error_message.clone().unwrap_or_else(|| "The chat provider refused the message.".to_owned()));
        let mut conn = self.conn(caller.tenant_id).await?;
        let row: Row = match &refused {
            Some(_) => row,
            None => {
                diesel::update(carts::table.filter(carts::id.eq(row.id).and(carts::tenant_id.eq(row.tenant_id))))
                    .set((
                        carts::status.eq("sent"),
                        carts::message_id.eq(message.map(|m| m.uid)),
                        carts::updated_at.eq(self.clock.now()),
                    ))
                    .returning(Row::as_returning())
                    .get_result(&mut conn)
                    .await?
            }
        };
        Ok(LinkAnswer {
            url: link,
            sent: refused.is_none(),
            send_error: refused,
            problems,
            cart: row.view(&self.public_url),
        })
    }

    /// `GET /carts`: newest first.
    pub async fn list_carts(
        &self,
        caller: &Caller,
        filter: CartFilter,
        page: PageRequest,
    ) -> Result<Page<Basket>, Error> {
        caller.require(Permission::CATALOGUE_VIEW)?;
        if let Some(status) = &filter.status
            && !STATUSES.contains(&status.as_str())
        {
            return Err(Error::field("status", "The status must be open, sent, ordered, abandoned or expired."));
        }
        let conversation = match filter.conversation_id.as_deref().map(str::trim) {
            None => None,
            Some(id) => Some(
                id.parse::<i64>()
                    .map_err(|_| Error::field("conversation_id", "The conversation_id must be a whole number."))?,
            ),
        };
        let mut conn = self.conn(caller.tenant_id).await?;
        let query = || {
            let mut query = carts::table.filter(carts::tenant_id.eq(caller.tenant_id.0)).into_boxed();
            if let Some(status) = &filter.status {
                query = query.filter(carts::status.eq(status.clone()));
            }
            if let Some(conversation) = conversation {
                query = query.filter(carts::conversation_id.eq(conversation));
            }
            query
        };
        let total: i64 = query().count().get_result(&mut conn).await?;
        let rows: Vec<Row> = query()
            .order(carts::id.desc())
            .limit(page.per_page)
            .offset(page.offset())
            .select(Row::as_select())
            .load(&mut conn)
            .await?;
        Ok(Page::new(rows.into_iter().map(|r| r.view(&self.public_url)).collect(), page, total))
    }

    /// `GET /carts/{ref}`: by its five-character code (any case) or its id.
    pub async fn get_cart(&self, caller: &Caller, reference: &str) -> Result<Basket, Error> {
        caller.require(Permission::CATALOGUE_VIEW)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        let reference = reference.trim();
        let mine = carts::tenant_id.eq(caller.tenant_id.0);
        // a code first (codes may be all digits: 2 to 9), then an id
        let by_code = match reference.chars().count() {
            5 => carts::table
                .filter(mine.and(carts::code.eq(reference.to_ascii_uppercase())))
                .select(Row::as_select())
                .first(&mut conn)
                .await
                .optional()?,
            _ => None,
        };
        let row = match (by_code, reference.parse::<i64>()) {
            (Some(row), _) => Some(row),
            (None, Ok(id)) => carts::table
                .filter(mine.and(carts::id.eq(id)))
                .select(Row::as_select())
                .first(&mut conn)
                .await
                .optional()?,
            (None, Err(_)) => None,
        };
        let row = row.ok_or_else(|| Error::not_found("Cart"))?;
        Ok(row.view(&self.public_url))
    }

    /// The basket page of a token (any tenant's: the token is the credential).
    pub async fn basket_page(&self, token: &str) -> Result<BasketPage, Error> {
        let row = self.cart_by_token(token).await?;
        let tenant = TenantId(row.tenant_id);
        let mut conn = self.conn(tenant).await?;
        let shop = shop_of(&mut conn, tenant, CatalogueId(row.catalogue_id)).await?;
        let offer = views(&mut conn, &shop, &row.offer).await?;
        Ok(BasketPage { tenant_id: tenant, shop: shop.name, basket: row.view(&self.public_url), offer })
    }

    async fn cart_by_token(&self, token: &str) -> Result<Row, Error> {
        let mut conn = store::connect_system(&self.pool).await?;
        carts::table
            .filter(carts::token.eq(token))
            .select(Row::as_select())
            .first(&mut conn)
            .await
            .optional()?
            .ok_or_else(|| Error::not_found("Cart"))
    }

    /// The customer submits the basket from its page: the order is taken with the quantities
    /// they set (lines set to 0 are left out), the basket is `ordered` and `cart.submitted`
    /// sent. 409 for a basket ordered or expired already; 422 with nothing to order.
    pub async fn submit_basket(&self, token: &str, submission: Submission) -> Result<(Basket, Order), Error> {
        let found = self.cart_by_token(token).await?;
        let tenant = TenantId(found.tenant_id);
        let mut conn = self.conn(tenant).await?;
        let shop = shop_of(&mut conn, tenant, CatalogueId(found.catalogue_id)).await?;
        let now = self.clock.now();
        conn.transaction::<_, Error, _>(async |conn| {
            let row: Row = carts::table
                .filter(carts::id.eq(found.id).and(carts::tenant_id.eq(tenant.0)))
                .select(Row::as_select())
                .for_update()
                .first(conn)
                .await?;
            match row.status.as_str() {
                "ordered" => {
                    return Err(Error::conflict("This basket has been ordered already.").with_reason("ordered"));
                }
                "expired" => return Err(Error::conflict("This basket has expired.").with_reason("expired")),
                _ if row.expires_at <= now => {
                    return Err(Error::conflict("This basket has expired.").with_reason("expired"));
                }
                _ => {}
            }
            let current: Vec<BasketItem> = serde_json::from_value(row.items.clone()).unwrap_or_default();
            let offered: Vec<String> = products::table
                .filter(products::id.eq_any(&row.offer).and(products::retired_at.is_null()))
                .select(products::sku)
                .load(conn)
                .await?;
            let mut wanted: Vec<Wanted> = Vec::new();
            for (sku, quantity) in &submission.quantities {
                if !(0..=MAX_QUANTITY).contains(quantity) {
                    return Err(Error::field("quantity", format!("A quantity is 0 to {MAX_QUANTITY}.")));
                }
                if *quantity == 0 {
                    continue;
                }
                let line = current.iter().find(|i| &i.sku == sku);
                if line.is_none() && !offered.contains(sku) {
                    continue;
                }
                wanted.push((
                    sku.clone(),
                    line.and_then(|l| l.variant.clone()),
                    line.map(|l| l.options.clone()).unwrap_or_default(),
                    line.and_then(|l| l.note.clone()),
                    *quantity as i32,
                ));
            }
            let (items, _) = price(conn, &shop, &wanted).await?;
            if items.is_empty() {
                return Err(Error::field("quantity", "Choose at least one product."));
            }
            let intake = OrderIntake {
                platform: if row.conversation_id.is_some() { "chat" } else { "storefront" }.to_owned(),
                customer_handle: row.customer.clone(),
                customer_name: submission.customer_name.clone().filter(|n| !n.trim().is_empty()),
                conversation_id: row.conversation_id,
                lines: items.iter().map(|i| IntakeLine { sku: i.sku.clone(), quantity: i.quantity }).collect(),
            };
            let order = crate::orders::intake::take(conn, &shop, &intake, now).await?;
            let subtotal: i64 = items.iter().map(|i| i.line_total_minor).sum();
            let row: Row = diesel::update(carts::table.filter(carts::id.eq(row.id).and(carts::tenant_id.eq(tenant.0))))
                .set((
                    carts::status.eq("ordered"),
                    carts::items.eq(json!(items)),
                    carts::subtotal_minor.eq(subtotal),
                    carts::order_id.eq(order.id),
                    carts::submitted_at.eq(now),
                    carts::updated_at.eq(now),
                ))
                .returning(Row::as_returning())
                .get_result(conn)
                .await?;
            let basket = row.view(&self.public_url);
            let payload = crate::events::cart_submitted(&basket, &order);
            store::outbox::emit(conn, tenant, "cart.submitted", payload, now).await?;
            Ok((basket, order))
        })
        .await
    }

    /// A basket's timer: `expired` once its time is up unless ordered; `abandoned` (with
    /// `cart.abandoned`) when it was sent in a chat with items and is still waiting.
    pub async fn basket_timeout(&self, tenant: TenantId, cart: i64) -> Result<(), Error> {
        let mut conn = self.conn(tenant).await?;
        let now = self.clock.now();
        conn.transaction::<_, Error, _>(async |conn| {
            let Some(row): Option<Row> = carts::table
                .filter(carts::id.eq(cart).and(carts::tenant_id.eq(tenant.0)))
                .select(Row::as_select())
                .for_update()
                .first(conn)
                .await
                .optional()?
            else {
                return Ok(());
            };
            let has_items = row.items.as_array().is_some_and(|i| !i.is_empty());
            let status = match row.status.as_str() {
                "open" | "sent" | "abandoned" if row.expires_at <= now => "expired",
                "sent" if row.conversation_id.is_some() && has_items && row.created_at + ABANDON_AFTER <= now => {
                    "abandoned"
                }
                _ => return Ok(()),
            };
            let row: Row = diesel::update(carts::table.filter(carts::id.eq(row.id).and(carts::tenant_id.eq(tenant.0))))
                .set((carts::status.eq(status), carts::updated_at.eq(now)))
                .returning(Row::as_returning())
                .get_result(conn)
                .await?;
            if status == "abandoned" {
                let payload = crate::events::cart_abandoned(&row.view(&self.public_url));
                store::outbox::emit(conn, tenant, "cart.abandoned", payload, now).await?;
            }
            Ok(())
        })
        .await
    }
}

/// The account's one shop (422 when it has none or several).
async fn only_shop(conn: &mut store::Conn, tenant: TenantId) -> Result<Shop, Error> {
    let shops: Vec<Shop> = catalogues::table
        .filter(catalogues::tenant_id.eq(tenant.0))
        .order(catalogues::id)
        .limit(2)
        .select(Shop::as_select())
        .load(conn)
        .await?;
    match <[Shop; 1]>::try_from(shops) {
        Ok([shop]) => Ok(shop),
        Err(shops) if shops.is_empty() => Err(Error::field("catalogue_id", "This account has no shop yet.")),
        Err(_) => Err(Error::field("catalogue_id", "This account has several shops: name one with catalogue_id.")),
    }
}

/// The products the page offers (a category's, the linked one), and the category as sent.
async fn offer(conn: &mut store::Conn, shop: &Shop, body: &ShopLink) -> Result<(Vec<i64>, Option<String>), Error> {
    let shelf = products::catalogue_id.eq(shop.id).and(products::retired_at.is_null());
    let mut ids: Vec<i64> = Vec::new();
    let mut category = None;
    if let Some(named) = &body.category {
        let categories: Vec<(i64, String)> = catalogue_categories::table
            .filter(catalogue_categories::catalogue_id.eq(shop.id))
            .select((catalogue_categories::id, catalogue_categories::name))
            .load(conn)
            .await?;
        let found = match named {
            CategoryRef::Id(id) => categories.iter().find(|(c, _)| c == id),
            CategoryRef::Name(wanted) => categories.iter().find(|(_, name)| slug(name) == slug(wanted)),
        };
        let Some((id, name)) = found else {
            return Err(Error::field("category", "The category is not one of this shop's (an id, a name or a slug)."));
        };
        category = Some(name.clone());
        ids = products::table
            .filter(shelf.and(products::category_id.eq(id)))
            .order((products::name, products::id))
            .limit(MAX_OFFER)
            .select(products::id)
            .load(conn)
            .await?;
    }
    if let Some(sku) = &body.sku {
        let id: i64 = products::table
            .filter(shelf.and(products::sku.eq(sku.trim())))
            .select(products::id)
            .first(conn)
            .await
            .optional()?
            .ok_or_else(|| Error::field("sku", "The sku is not a product of this shop."))?;
        if !ids.contains(&id) {
            ids.insert(0, id);
        }
    }
    Ok((ids, category))
}

/// Prices the wanted lines from the shelf: lines whose product is unknown, or priced in another
/// currency than the first, are left out with a problem.
async fn price(
    conn: &mut store::Conn,
    shop: &Shop,
    wanted: &[Wanted],
) -> Result<(Vec<BasketItem>, Vec<LinkProblem>), Error> {
    let skus: Vec<&str> = wanted.iter().map(|w| w.0.as_str()).collect();
    let found: Vec<(String, String, i64, Option<i64>, String)> = products::table
        .filter(products::catalogue_id.eq(shop.id).and(products::retired_at.is_null()).and(products::sku.eq_any(&skus)))
        .select((products::sku, products::name, products::price, products::sale_price, products::currency))
        .load(conn)
        .await?;
    let by_sku: HashMap<&str, &(String, String, i64, Option<i64>, String)> =
        found.iter().map(|p| (p.0.as_str(), p)).collect();
    let mut items = Vec::new();
    let mut problems = Vec::new();
    for (sku, variant, options, note, quantity) in wanted {
        let Some((_, name, price, sale_price, currency)) = by_sku.get(sku.as_str()).copied() else {
            problems
                .push(LinkProblem { sku: Some(sku.clone()), reason: "No product of this shop has this sku.".into() });
            continue;
        };
        if <[BasketItem]>::first(&items).is_some_and(|first| &first.currency != currency) {
            problems.push(LinkProblem {
                sku: Some(sku.clone()),
                reason: format!("Priced in {currency}, not in the basket's currency."),
            });
            continue;
        }
        // as the order will price it
        let unit = sale_price.unwrap_or(*price);
        items.push(BasketItem {
            sku: sku.clone(),
            name: name.clone(),
            variant: variant.clone(),
            options: options.clone(),
            note: note.clone(),
            quantity: *quantity,
            unit_price_minor: unit,
            line_total_minor: unit * i64::from(*quantity),
            currency: currency.clone(),
        });
    }
    Ok((items, problems))
}
