//! Order intake: one service for every platform (chat orders from the chat integration, manual
//! and storefront orders from `POST /catalogues/{catalogue}/orders`).

use std::collections::HashMap;

use diesel::prelude::*;
use diesel::sql_types::{Array, BigInt, Bool, Integer, Nullable, Text};
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::Patch;
use kernel::{Caller, Error, Permission, TenantId};
use serde::{Deserialize, Serialize};
use store::idempotency::{self, Answer, Key, Request};
use store::jobs::Enqueue;
use time::OffsetDateTime;
use utoipa::ToSchema;

use super::{ExpireHold, LineRow, Order, Row, allocate, wanted};
use crate::CatalogueId;
use crate::catalogues::Row as Shop;
use crate::rules::{MAX_QUANTITY, Quantity, Rules, Whole, choice, sent};
use crate::schema::{orders, products};
use crate::service::{CommerceService, shop_of};
use crate::status::{Hold, OrderStatus};
use crate::stock::{self, Figures, OrderCause};

/// Lines in one order.
pub const MAX_LINES: usize = 100;

choice! {
    /// The platforms an order may come from through the API.
    ApiPlatform = &["manual", "storefront"];
}

/// `POST /catalogues/{catalogue}/orders`: a manual or storefront order as the API takes it.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct NewOrder {
    /// `manual` (default) or `storefront` through the API; `chat` and `ivr` come from their
    /// integrations.
    #[schema(value_type = Option<ApiPlatform>)]
    pub platform: Option<String>,
    /// The customer's handle (a phone number or chat id), up to 191 characters.
    #[schema(max_length = 191)]
    pub customer_handle: Option<String>,
    /// Alias of `customer_handle`, read when that is not sent.
    #[schema(max_length = 191)]
    pub customer_chat_id: Option<String>,
    /// Up to 191 characters.
    #[schema(max_length = 191)]
    pub customer_name: Option<String>,
    /// 1 to 100 lines.
    #[schema(value_type = Vec<NewLine>, min_items = 1, max_items = 100)]
    pub lines: Vec<NewLine>,
}

/// One line of a `NewOrder`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct NewLine {
    /// The product's code, up to 100 characters, not blank (required; `retailer_id` is accepted
    /// instead).
    #[schema(
        max_length = 100,
        pattern = r"[^\t\n\x0B\x0C\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]"
    )]
    pub sku: Option<String>,
    /// Alias of `sku`, read when that is not sent.
    pub retailer_id: Option<String>,
    /// 1 to 100,000.
    #[schema(value_type = Quantity)]
    pub quantity: Whole,
}

/// An order as a platform hands it over, checked: what the intake takes.
#[derive(Debug, Clone, Serialize)]
pub struct OrderIntake {
    /// `manual`, `storefront`, `chat` or `ivr`.
    pub platform: String,
    pub customer_handle: Option<String>,
    pub customer_name: Option<String>,
    pub conversation_id: Option<i64>,
    pub lines: Vec<IntakeLine>,
}

#[derive(Debug, Clone, Serialize)]
pub struct IntakeLine {
    pub sku: String,
    pub quantity: i32,
}

/// A product an order names, read under its row lock.
struct Priced {
    figures: Figures,
    sku: String,
    name: String,
    unit_price: i64,
    currency: String,
}

type PricedRow = (i64, String, String, i64, Option<i64>, String, Option<i32>, i32);

impl CommerceService {
    /// `POST /catalogues/{catalogue}/orders`: a manual or storefront order. With an
    /// `Idempotency-Key` a repeat answers the first order, once the caller may order here.
    pub async fn create_order(
        &self,
        caller: &Caller,
        catalogue: CatalogueId,
        body: NewOrder,
        key: Option<Key>,
    ) -> Result<Answer<Order>, Error> {
        caller.require(Permission::CATALOGUE_MANAGE)?;
        let order = check(body)?;
        let mut conn = self.conn(caller.tenant_id).await?;
        // the caller is authorized, and the shop theirs, before any stored answer is shown
        let shop = shop_of(&mut conn, caller.tenant_id, catalogue).await?;
        let request =
            key.map(|key| Request::new(caller, &format!("commerce.orders:{catalogue}"), key, &order)).transpose()?;
        let now = self.clock.now();
        idempotency::once(&mut conn, now, request, async |conn| take(conn, &shop, &order, now).await).await
    }

    /// Takes an order from any platform: prices and freezes the lines, holds stock, emits
    /// `order.received`, and schedules the hold's expiry.
    pub async fn intake(&self, tenant: TenantId, catalogue: CatalogueId, order: OrderIntake) -> Result<Order, Error> {
        let mut conn = self.conn(tenant).await?;
        let shop = shop_of(&mut conn, tenant, catalogue).await?;
        take(&mut conn, &shop, &order, self.clock.now()).await
    }
}

/// The intake's one transaction.
pub(crate) async fn take(
    conn: &mut store::Conn,
    shop: &Shop,
    order: &OrderIntake,
    now: OffsetDateTime,
) -> Result<Order, Error> {
    conn.transaction::<_, Error, _>(async |conn| {
        let created = create(conn, shop, order, now).await?;
        crate::events::order_event(conn, TenantId(shop.tenant_id), &created, "order.received", None, now).await?;
        Ok(created)
    })
    .await
}

async fn create(conn: &mut store::Conn, shop: &Shop, order: &OrderIntake, now: OffsetDateTime) -> Result<Order, Error> {
    let skus: Vec<&str> = order.lines.iter().map(|l| l.sku.as_str()).collect();
    // the prices, and the stock under row locks taken in id order (as every stock writer does);
    // a query of the DSL, so its prepared statement is cached (this is the hottest read)
    let rows: Vec<PricedRow> = products::table
        .filter(products::catalogue_id.eq(shop.id).and(products::retired_at.is_null()).and(products::sku.eq_any(&skus)))
        .order(products::id)
        .select((
            products::id,
            products::sku,
            products::name,
            products::price,
            products::sale_price,
            products::currency,
            products::inventory,
            products::reserved,
        ))
        .for_update()
        .load(conn)
        .await?;
    let priced: Vec<Priced> = rows
        .into_iter()
        .map(|(id, sku, name, price, sale_price, currency, inventory, reserved)| Priced {
            figures: Figures { id, inventory, reserved },
            sku,
            name,
            unit_price: sale_price.unwrap_or(price),
            currency,
        })
        .collect();
    let by_sku: HashMap<&str, &Priced> = priced.iter().map(|p| (p.sku.as_str(), p)).collect();
    let mut currencies: Vec<&str> = priced.iter().map(|p| p.currency.as_str()).collect();
    currencies.sort_unstable();
    currencies.dedup();
    if currencies.len() > 1 {
        return Err(Error::field("lines", "The lines are priced in more than one currency."));
    }
    let currency = match <[_]>::first(&currencies) {
        Some(currency) => (*currency).to_owned(),
        None => crate::products::default_currency(conn, shop).await?,
    };
    let mut lines: Vec<LineRow> = order
        .lines
        .iter()
        .enumerate()
        .map(|(n, line)| {
            let found = by_sku.get(line.sku.as_str());
            LineRow {
                order_id: 0,
                position: n as i32,
                product_id: found.map(|p| p.figures.id),
                sku: line.sku.clone(),
                name: found.map(|p| p.name.clone()),
                quantity: line.quantity,
                unit_price_minor: found.map(|p| p.unit_price),
                line_total_minor: found.map(|p| p.unit_price * i64::from(line.quantity)),
                currency: found.map(|p| p.currency.clone()),
                reserved: 0,
                stock_short: false,
                unresolved: found.is_none(),
            }
        })
        .collect();
    let total: i64 = lines.iter().filter_map(|l| l.line_total_minor).sum();
    let expires = now + time::Duration::hours(shop.reservation_ttl_hours.into());
    let row: Row = diesel::insert_into(orders::table)
        .values((
            orders::tenant_id.eq(shop.tenant_id),
            orders::catalogue_id.eq(shop.id),
            orders::platform.eq(&order.platform),
            orders::status.eq(OrderStatus::Pending),
            orders::stock_policy.eq(&shop.stock_policy),
            orders::hold.eq(Hold::Held),
            orders::hold_expires_at.eq(expires),
            orders::reservation_ttl_hours.eq(shop.reservation_ttl_hours),
            orders::allow_backorder.eq(shop.allow_backorder),
            orders::customer_handle.eq(&order.customer_handle),
            orders::customer_name.eq(&order.customer_name),
            orders::total_minor.eq(total),
            orders::currency.eq(&currency),
            orders::conversation_id.eq(order.conversation_id),
            orders::priced_at.eq(now),
            orders::created_at.eq(now),
            orders::updated_at.eq(now),
        ))
        .returning(Row::as_returning())
        .get_result(conn)
        .await?;
    let cause = format!("order {} created", row.id);
    let why = OrderCause { order_id: row.id, cause: &cause, now };
    let wanted = wanted(&lines);
    let figures: HashMap<i64, Figures> = priced.into_iter().map(|p| (p.figures.id, p.figures)).collect();
    let held = stock::hold_locked(conn, &figures, &wanted, shop.allow_backorder, &why).await?;
    allocate(&mut lines, &held);
    insert_lines(conn, row.tenant_id, row.id, &lines).await?;
    let ids: Vec<i64> = wanted.iter().map(|(id, _)| *id).collect();
    stock::check_low(conn, shop, &ids, now).await?;
    schedule_expiry(conn, &row, expires).await?;
    Ok(Order::of(row, lines))
}

pub(crate) async fn schedule_expiry(conn: &mut store::Conn, row: &Row, at: OffsetDateTime) -> Result<(), Error> {
    let options = Enqueue { tenant_id: Some(TenantId(row.tenant_id)), run_at: Some(at), ..Enqueue::default() };
    store::jobs::enqueue(conn, &ExpireHold { order_id: crate::OrderId(row.id) }, options).await?;
    Ok(())
}

async fn insert_lines(conn: &mut store::Conn, tenant: i64, order: i64, lines: &[LineRow]) -> Result<(), Error> {
    diesel::sql_query(
        "INSERT INTO order_lines (tenant_id, order_id, position, product_id, sku, name, quantity, unit_price_minor,
             line_total_minor, currency, reserved, stock_short, unresolved)
         SELECT $13, $1, u.* FROM unnest($2::int[], $3::bigint[], $4::text[], $5::text[], $6::int[], $7::bigint[],
             $8::bigint[], $9::text[], $10::int[], $11::bool[], $12::bool[]) AS u",
    )
    .bind::<BigInt, _>(order)
    .bind::<Array<Integer>, _>(lines.iter().map(|l| l.position).collect::<Vec<_>>())
    .bind::<Array<Nullable<BigInt>>, _>(lines.iter().map(|l| l.product_id).collect::<Vec<_>>())
    .bind::<Array<Text>, _>(lines.iter().map(|l| l.sku.clone()).collect::<Vec<_>>())
    .bind::<Array<Nullable<Text>>, _>(lines.iter().map(|l| l.name.clone()).collect::<Vec<_>>())
    .bind::<Array<Integer>, _>(lines.iter().map(|l| l.quantity).collect::<Vec<_>>())
    .bind::<Array<Nullable<BigInt>>, _>(lines.iter().map(|l| l.unit_price_minor).collect::<Vec<_>>())
    .bind::<Array<Nullable<BigInt>>, _>(lines.iter().map(|l| l.line_total_minor).collect::<Vec<_>>())
    .bind::<Array<Nullable<Text>>, _>(lines.iter().map(|l| l.currency.clone()).collect::<Vec<_>>())
    .bind::<Array<Integer>, _>(lines.iter().map(|l| l.reserved).collect::<Vec<_>>())
    .bind::<Array<Bool>, _>(lines.iter().map(|l| l.stock_short).collect::<Vec<_>>())
    .bind::<Array<Bool>, _>(lines.iter().map(|l| l.unresolved).collect::<Vec<_>>())
    .bind::<BigInt, _>(tenant)
    .execute(conn)
    .await?;
    Ok(())
}

/// The REST body, checked: manual or storefront, up to 100 lines of 1 to 100,000 units; every
/// problem at once.
fn check(body: NewOrder) -> Result<OrderIntake, Error> {
    let mut rules = Rules::new();
    let platform = rules.one_of("platform", sent(body.platform), &["manual", "storefront", "chat", "ivr"]);
    if let Patch::Set(other @ ("chat" | "ivr")) = platform {
        rules.error("platform", format!("{other} orders come from that integration; use manual or storefront."));
    }
    // The alias is checked even when `customer_handle` wins, as the description states its limit.
    let chat_id = rules.text("customer_chat_id", sent(body.customer_chat_id), 191);
    let handle = match body.customer_handle {
        Some(handle) => rules.text("customer_handle", Patch::Set(handle), 191),
        None => chat_id,
    };
    let name = rules.text("customer_name", sent(body.customer_name), 191);
    let lines = rules.rows("lines", &body.lines, MAX_LINES, |rules, line| {
        let sku = rules.sku(sent(line.sku.clone()), sent(line.retailer_id.clone()));
        let sku = rules.required("sku", sku);
        let quantity = rules.int("quantity", Patch::Set(line.quantity), 1, MAX_QUANTITY);
        let quantity = rules.required("quantity", quantity);
        Some(IntakeLine { sku: sku?, quantity: quantity? as i32 })
    });
    rules.finish()?;
    Ok(OrderIntake {
        platform: platform.set().unwrap_or("manual").to_owned(),
        customer_handle: handle.set(),
        customer_name: name.set(),
        conversation_id: None,
        lines,
    })
}

/// Orders customers place from the chat catalogue (contract: Orders from chat, `order.received`):
/// taken by the shop whose `meta_catalogue_id` is the cart's catalogue (a workspace with one shop
/// takes them all there), with platform `chat`, the customer's chat id as `customer_handle` and
/// the conversation; once per message, however often the job runs.
#[async_trait::async_trait]
impl messaging::chat::orders::ChatOrders for CommerceService {
    async fn receive(&self, order: messaging::chat::orders::ChatOrder) -> Result<(), Error> {
        let tenant = order.tenant_id;
        let mut conn = self.conn(tenant).await?;
        let shops: Vec<(i64, Option<String>)> = crate::schema::catalogues::table
            .filter(crate::schema::catalogues::tenant_id.eq(tenant.0))
            .select((crate::schema::catalogues::id, crate::schema::catalogues::meta_catalogue_id))
            .load(&mut conn)
            .await?;
        let matched = shops.iter().find(|(_, meta)| meta.is_some() && *meta == order.catalog_id);
        let shop = match (matched, &shops[..]) {
            (Some((id, _)), _) | (None, [(id, _)]) => *id,
            _ => {
                tracing::warn!(message = order.message_uid, catalog = ?order.catalog_id, "no shop takes this chat order");
                return Ok(());
            }
        };
        let lines: Vec<IntakeLine> = order
            .items
            .iter()
            .filter(|item| !item.retailer_id.trim().is_empty() && (1..=MAX_QUANTITY).contains(&item.quantity))
            .take(MAX_LINES)
            .map(|item| IntakeLine { sku: item.retailer_id.trim().to_owned(), quantity: item.quantity as i32 })
            .collect();
        if lines.is_empty() {
            tracing::warn!(message = order.message_uid, "a chat order without a line this shop can take");
            return Ok(());
        }
        let intake = OrderIntake {
            platform: "chat".to_owned(),
            customer_handle: Some(order.customer_chat_id.clone()),
            customer_name: order.customer_name.clone(),
            conversation_id: order.conversation_id,
            lines,
        };
        let shop = shop_of(&mut conn, tenant, CatalogueId(shop)).await?;
        take_once(&mut conn, &shop, &order.message_uid, &intake, self.clock.now()).await?;
        Ok(())
    }

    async fn menu(&self, tenant: TenantId, shop: i64) -> Result<Vec<messaging::forms::MenuProduct>, Error> {
        let mut conn = self.conn(tenant).await?;
        let shop = shop_of(&mut conn, tenant, CatalogueId(shop)).await.map_err(|_| {
            Error::field("menu_shop_id", "The menu_shop_id is not a shop of this account (GET /catalogues).")
        })?;
        // published: on the shelf, and shown on a platform
        let rows: Vec<(String, String, i64, Option<i64>, String)> = products::table
            .filter(products::catalogue_id.eq(shop.id).and(products::retired_at.is_null()))
            .filter(diesel::dsl::exists(
                crate::schema::product_listings::table
                    .filter(crate::schema::product_listings::product_id.eq(products::id))
                    .filter(crate::schema::product_listings::state.eq_any(["synced", "drifted"])),
            ))
            .order(products::id)
            .limit(messaging::forms::menu::MENU_PRODUCTS_MAX as i64)
            .select((products::sku, products::name, products::price, products::sale_price, products::currency))
            .load(&mut conn)
            .await?;
        Ok(rows
            .into_iter()
            .map(|(sku, name, price, sale, currency)| messaging::forms::MenuProduct {
                sku,
                name,
                price_minor: sale.unwrap_or(price),
                currency,
            })
            .collect())
    }

    async fn place(
        &self,
        shop: i64,
        order: messaging::chat::orders::ChatOrder,
    ) -> Result<messaging::chat::orders::PlacedOrder, Error> {
        let tenant = order.tenant_id;
        let mut conn = self.conn(tenant).await?;
        let shop = shop_of(&mut conn, tenant, CatalogueId(shop)).await?;
        let lines = order
            .items
            .iter()
            .filter(|item| (1..=MAX_QUANTITY).contains(&item.quantity))
            .take(MAX_LINES)
            .map(|item| IntakeLine { sku: item.retailer_id.clone(), quantity: item.quantity as i32 })
            .collect();
        let intake = OrderIntake {
            platform: "chat".to_owned(),
            customer_handle: Some(order.customer_chat_id.clone()),
            customer_name: order.customer_name.clone(),
            conversation_id: order.conversation_id,
            lines,
        };
        let placed = match take_once(&mut conn, &shop, &order.message_uid, &intake, self.clock.now()).await? {
            Answer::Done(order) => serde_json::to_value(order).map_err(Error::internal)?,
            Answer::Replay(first) => first,
        };
        let order_id = placed["id"].as_i64().ok_or_else(|| Error::internal("a placed order without its id"))?;
        Ok(messaging::chat::orders::PlacedOrder {
            order_id,
            order_reference: format!("ORD-{order_id}"),
            order_total: placed["total_minor"].as_i64().unwrap_or_default(),
            currency: placed["currency"].as_str().unwrap_or_default().to_owned(),
        })
    }
}

/// Takes an order once per chat message: the message's uid is the key, so a second run of the
/// job replays the first order.
async fn take_once(
    conn: &mut store::Conn,
    shop: &Shop,
    message_uid: &str,
    intake: &OrderIntake,
    now: OffsetDateTime,
) -> Result<Answer<Order>, Error> {
    let caller = Caller::operator(TenantId(shop.tenant_id), "");
    let key = Key::parse(&format!("chat-order:{message_uid}"))?
        .ok_or_else(|| Error::internal("a chat order without its message"))?;
    let request = Request::new(&caller, "commerce.chat_orders", key, &message_uid)?;
    idempotency::once(conn, now, Some(request), async |conn| take(conn, shop, intake, now).await).await
}
