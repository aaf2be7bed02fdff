//! The `orders` tools: orders (list, read, create, set status) and baskets (shop links, list,
//! read), over `commerce::CommerceService`, each calling the method its REST route
//! (`apps/gateway/src/v3/orders.rs`, `carts.rs`) calls, with the same permission
//! (`communications.catalogue.view` to read, `.manage` to write; a link sent in the chat also
//! `communications.send`, and `mcp:send`).

use commerce::baskets::{Basket, CartFilter, LinkAnswer, ShopLink};
use commerce::orders::{NewOrder, OrderFilter, StatusChange};
use commerce::{CatalogueId, Order, OrderId};
use kernel::page::PageQuery;
use kernel::{Error, Page, PageRequest, Permission, parse_id};
use serde_json::Value;
use store::idempotency::Answer;

use crate::scopes::Elevation;
use crate::tool::{
    Call, Effect, Tool, answer, idempotency_key, key_refusal, numeric_id, object, params_of, query_input, schema_of,
    with_def, with_members,
};

const SERVER: &str = "orders";

/// The orders tools.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "list_orders",
            title: "List orders",
            description: "The workspace's orders from every platform, newest change first (25 a page): filter by status, platform, catalogue_id and updated_since, as GET /catalogues/orders does.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::CATALOGUE_VIEW),
            effect: Effect::Read,
            input: list_orders_input,
            output: || with_def::<Order>(schema_of::<Page<Order>>()),
            call: |call| Box::pin(list_orders(call)),
        },
        Tool {
            name: "get_order",
            title: "Get an order",
            description: "One order by its id: its lines priced and frozen, its status, its total and what it holds of the stock.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::CATALOGUE_VIEW),
            effect: Effect::Read,
            input: || object(&[("order", numeric_id("The order's id."), true)]),
            output: schema_of::<Order>,
            call: |call| Box::pin(get_order(call)),
        },
        Tool {
            name: "create_order",
            title: "Create an order",
            description: "Takes a manual or storefront order in a shop, as POST /catalogues/{catalogue}/orders does: 1 to 100 lines by sku (retailer_id accepted) and quantity, priced and frozen now; stock is held for the lines (the shop's stock policy says how); the order starts pending.",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: Some(Permission::CATALOGUE_MANAGE),
            effect: Effect::Create,
            input: || {
                with_members(
                    schema_of::<NewOrder>(),
                    &[("catalogue", numeric_id("The shop's id."), true), ("idempotency_key", idempotency_key(), false)],
                )
            },
            output: schema_of::<Order>,
            call: |call| Box::pin(create_order(call)),
        },
        Tool {
            name: "set_order_status",
            title: "Set an order's status",
            description: "Moves an order to any status from any status (pending, confirmed, processing, shipped, delivered, cancelled, refunded), with its stock effects; refunded moves no money; the same status again changes nothing.",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: Some(Permission::CATALOGUE_MANAGE),
            effect: Effect::Update,
            input: || with_members(schema_of::<StatusChange>(), &[("order", numeric_id("The order's id."), true)]),
            output: schema_of::<Order>,
            call: |call| Box::pin(set_order_status(call)),
        },
        Tool {
            name: "create_shop_link",
            title: "Make a basket link",
            description: "Makes a basket for a customer and answers its page's link (url) without sending it, as POST /shop-links does without a recipient: a product (sku), a category's products (category: id, name or slug) or lines (items: sku, variant, addons, quantity, note). Lines whose product is unknown are left out and listed in problems. The customer opens the link, sets quantities and submits it as an order. To send it in the chat, use send_shop_link.",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: Some(Permission::CATALOGUE_VIEW),
            effect: Effect::Create,
            input: || link_input(false),
            output: schema_of::<LinkAnswer>,
            call: |call| Box::pin(create_shop_link(call)),
        },
        Tool {
            name: "send_shop_link",
            title: "Send a basket link",
            description: "Makes a basket as create_shop_link does and sends its link in the chat to the customer named by conversation_id or to (their newest conversation), only within their 24-hour window (refused as conflict window_closed otherwise, and nothing is made). message replaces the default text; the link is added when the text lacks it.",
            server: SERVER,
            elevation: Some(Elevation::Send),
            permission: Some(Permission::SEND),
            effect: Effect::Create,
            input: || link_input(true),
            output: schema_of::<LinkAnswer>,
            call: |call| Box::pin(send_shop_link(call)),
        },
        Tool {
            name: "list_baskets",
            title: "List baskets",
            description: "The workspace's baskets, newest first (25 a page): filter by status (open, sent, ordered, abandoned, expired) and conversation_id, as GET /carts does.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::CATALOGUE_VIEW),
            effect: Effect::Read,
            input: list_baskets_input,
            output: || with_def::<Basket>(schema_of::<Page<Basket>>()),
            call: |call| Box::pin(list_baskets(call)),
        },
        Tool {
            name: "get_basket",
            title: "Get a basket",
            description: "One basket by its five-character code or its id: items with variants, options and notes, subtotal, status, and the order it became.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::CATALOGUE_VIEW),
            effect: Effect::Read,
            input: || {
                object(&[(
                    "ref",
                    serde_json::json!({"type": "string", "description": "The five-character code, or the id."}),
                    true,
                )])
            },
            output: schema_of::<Basket>,
            call: |call| Box::pin(get_basket(call)),
        },
    ]
}

/// The shop link body; `sending` keeps the recipient members (one of them required), else
/// leaves them out.
fn link_input(sending: bool) -> Value {
    let mut input = schema_of::<ShopLink>();
    if let Some(properties) = input["properties"].as_object_mut()
        && !sending
    {
        for member in ["conversation_id", "to", "message"] {
            properties.remove(member);
        }
    }
    input
}

fn list_baskets_input() -> Value {
    let mut params = params_of::<PageQuery>();
    params.extend(params_of::<CartFilter>());
    query_input(&[], params)
}

/// `GET /catalogues/orders`' query: its page and its filters.
fn list_orders_input() -> Value {
    let mut params = params_of::<PageQuery>();
    params.extend(params_of::<OrderFilter>());
    query_input(&[], params)
}

async fn list_orders(call: Call) -> Result<Value, Error> {
    let members = list_orders_input();
    let page: PageQuery = call.query(&members)?;
    let filter: OrderFilter = call.query(&members)?;
    let page = PageRequest::parse(&page, commerce::orders::PER_PAGE)?;
    answer(call.domains.commerce.list_orders(&call.caller, &filter, page).await?)
}

async fn get_order(mut call: Call) -> Result<Value, Error> {
    let order: OrderId = parse_id(&call.take_path("order")?, "Order")?;
    answer(call.domains.commerce.get_order(&call.caller, order).await?)
}

async fn create_order(mut call: Call) -> Result<Value, Error> {
    let catalogue = call.take_path("catalogue")?;
    let key = call.take_idempotency_key()?;
    let body: NewOrder = call.body()?;
    let catalogue: CatalogueId = parse_id(&catalogue, "Catalogue")?;
    let order = call.domains.commerce.create_order(&call.caller, catalogue, body, key).await.map_err(key_refusal)?;
    match order {
        Answer::Done(order) => answer(order),
        Answer::Replay(first) => Ok(first),
    }
}

async fn set_order_status(mut call: Call) -> Result<Value, Error> {
    let order: OrderId = parse_id(&call.take_path("order")?, "Order")?;
    let change: StatusChange = call.body()?;
    answer(call.domains.commerce.set_order_status(&call.caller, order, change).await?)
}

async fn create_shop_link(mut call: Call) -> Result<Value, Error> {
    for member in ["conversation_id", "to", "message"] {
        if call.args.contains_key(member) {
            return Err(Error::field(member, "This tool does not send: use send_shop_link to send the link."));
        }
    }
    let body: ShopLink = call.body()?;
    answer(call.domains.commerce.create_shop_link(&call.caller, body).await?)
}

async fn send_shop_link(mut call: Call) -> Result<Value, Error> {
    let body: ShopLink = call.body()?;
    if body.conversation_id.is_none() && body.to.is_none() {
        return Err(Error::field(
            "to",
            "Name the customer: conversation_id or to (create_shop_link makes a link without sending).",
        ));
    }
    answer(call.domains.commerce.create_shop_link(&call.caller, body).await?)
}

async fn list_baskets(call: Call) -> Result<Value, Error> {
    let members = list_baskets_input();
    let page: PageQuery = call.query(&members)?;
    let filter: CartFilter = call.query(&members)?;
    let page = PageRequest::parse(&page, commerce::baskets::PER_PAGE)?;
    answer(call.domains.commerce.list_carts(&call.caller, filter, page).await?)
}

async fn get_basket(mut call: Call) -> Result<Value, Error> {
    let reference = call.take_path("ref")?;
    answer(call.domains.commerce.get_cart(&call.caller, &reference).await?)
}
