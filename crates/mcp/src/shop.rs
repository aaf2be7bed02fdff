//! The `shop` tools: catalogues, products by sku, stock levels, inventory push, product batches
//! and their sync reports, over `commerce::CommerceService`, each calling the method its REST
//! route (`apps/gateway/src/v3/catalogues.rs`) calls, with the same permission
//! (`communications.catalogue.view` to read, `.manage` to write).

use commerce::catalogues::Catalogue;
use commerce::products::{Product, ProductRef};
use commerce::stock::{Level, LevelFilter, LevelsPush, Pushed};
use commerce::sync::{Batch, Report};
use commerce::{CatalogueId, SyncId};
use kernel::page::PageQuery;
use kernel::{Error, Page, PageRequest, Permission, parse_id};
use serde::Deserialize;
use serde_json::{Value, json};
use store::idempotency::Answer;

use crate::scopes::Elevation;
use crate::tool::{
    Call, Effect, Tool, answer, idempotency_key, key_refusal, numeric_id, object, params_of, query_input, schema_of,
    with_def, with_members,
};

const SERVER: &str = "shop";

/// The shop tools.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "list_catalogues",
            title: "List shops",
            description: "The workspace's catalogues (shops), 25 a page, each with its settings, stock policy and product and order counts.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::CATALOGUE_VIEW),
            effect: Effect::Read,
            input: || query_input(&[], params_of::<PageQuery>()),
            output: || with_def::<Catalogue>(schema_of::<Page<Catalogue>>()),
            call: |call| Box::pin(list_catalogues(call)),
        },
        Tool {
            name: "get_catalogue",
            title: "Get a shop",
            description: "One catalogue (shop) by its id.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::CATALOGUE_VIEW),
            effect: Effect::Read,
            input: || object(&[catalogue()]),
            output: schema_of::<Catalogue>,
            call: |call| Box::pin(get_catalogue(call)),
        },
        Tool {
            name: "get_product_by_sku",
            title: "Get a product by its code",
            description: "One product of a shop by its sku (retailer_id, the platforms' name for it, is accepted instead; sku wins when both are sent): price, stock (inventory, reserved, available), availability and where it is listed.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::CATALOGUE_VIEW),
            effect: Effect::Read,
            input: || {
                object(&[
                    catalogue(),
                    ("sku", json!({"type": "string", "description": "The product's code."}), false),
                    (
                        "retailer_id",
                        json!({"type": "string", "description": "Alias of sku, read when that is not sent."}),
                        false,
                    ),
                ])
            },
            output: schema_of::<Product>,
            call: |call| Box::pin(get_product_by_sku(call)),
        },
        Tool {
            name: "list_products",
            title: "List a shop's products",
            description: "The shelf of a shop, oldest first (25 a page).",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::CATALOGUE_VIEW),
            effect: Effect::Read,
            input: || query_input(&[catalogue()], params_of::<PageQuery>()),
            output: || with_def::<Product>(schema_of::<Page<Product>>()),
            call: |call| Box::pin(list_products(call)),
        },
        Tool {
            name: "get_stock_levels",
            title: "Get stock levels",
            description: "Per-product stock of a shop: inventory (on hand, null when untracked), reserved, available and availability, 25 a page; sku picks codes, tracked_only leaves out untracked products, as GET /catalogues/{catalogue}/inventory does.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::CATALOGUE_VIEW),
            effect: Effect::Read,
            input: stock_levels_input,
            output: || with_def::<Level>(schema_of::<Page<Level>>()),
            call: |call| Box::pin(get_stock_levels(call)),
        },
        Tool {
            name: "push_inventory",
            title: "Push inventory",
            description: "Sets absolute on-hand counts for up to 5,000 codes of a shop ({levels: [{sku, inventory}]}; retailer_id accepted for sku; the last row for a code wins); the answer lists the resulting figures (derived) and the unknown_skus; unchanged levels are counted unchanged and not republished.",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: Some(Permission::CATALOGUE_MANAGE),
            effect: Effect::Update,
            input: || with_members(schema_of::<LevelsPush>(), &[catalogue()]),
            output: schema_of::<Pushed>,
            call: |call| Box::pin(push_inventory(call)),
        },
        Tool {
            name: "submit_product_batch",
            title: "Submit a product batch",
            description: "Queues up to 5,000 products for a shop as one sync run ({mode: upsert (default) or replace, products}); rows match on sku, else on name; a bad row is rejected in the report while the others land; replace retires the shop's products left out. Answers the queued run's report: read it with get_sync_report. A repeated idempotency_key answers the run that owns it with replayed true.",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: Some(Permission::CATALOGUE_MANAGE),
            effect: Effect::Replace,
            input: || with_members(schema_of::<Batch>(), &[catalogue(), ("idempotency_key", idempotency_key(), false)]),
            output: schema_of::<Report>,
            call: |call| Box::pin(submit_product_batch(call)),
        },
        Tool {
            name: "get_sync_report",
            title: "Get a sync report",
            description: "One sync run of a shop (a product batch): its status (queued, running, completed, failed), the counts received, created, updated, unchanged, rejected and retired, and its problems.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::CATALOGUE_VIEW),
            effect: Effect::Read,
            input: || object(&[catalogue(), ("sync", numeric_id("The sync run's id."), true)]),
            output: schema_of::<Report>,
            call: |call| Box::pin(get_sync_report(call)),
        },
    ]
}

/// The `catalogue` member: the shop a REST path names.
fn catalogue() -> (&'static str, Value, bool) {
    ("catalogue", numeric_id("The shop's id."), true)
}

fn shop(call: &mut Call) -> Result<CatalogueId, Error> {
    parse_id(&call.take_path("catalogue")?, "Catalogue")
}

/// `GET /catalogues/{catalogue}/inventory`'s query: its page, `sku[]` and `tracked_only`.
fn stock_levels_input() -> Value {
    let sku = json!({"type": "array", "items": {"type": "string"},
                     "description": "Only these codes (sku[] or sku=a,b on REST)."});
    let tracked_only = json!({"type": "boolean", "description": "Leave out products whose stock is not tracked."});
    let mut input = query_input(&[catalogue()], params_of::<PageQuery>());
    input["properties"]["sku"] = sku;
    input["properties"]["tracked_only"] = tracked_only;
    input
}

/// The inventory filters as the query carries them, text.
#[derive(Deserialize)]
struct LevelQuery {
    sku: Option<String>,
    tracked_only: Option<String>,
}

async fn list_catalogues(call: Call) -> Result<Value, Error> {
    let page: PageQuery = call.query(&query_input(&[], params_of::<PageQuery>()))?;
    let page = PageRequest::parse(&page, commerce::catalogues::PER_PAGE)?;
    answer(call.domains.commerce.list_catalogues(&call.caller, page).await?)
}

async fn get_catalogue(mut call: Call) -> Result<Value, Error> {
    let shop = shop(&mut call)?;
    answer(call.domains.commerce.get_catalogue(&call.caller, shop).await?)
}

async fn get_product_by_sku(mut call: Call) -> Result<Value, Error> {
    let shop = shop(&mut call)?;
    // contract: `retailer_id` is an alias of `sku`; `sku` wins when both are sent
    let sku = call.take_optional_text("sku")?;
    let retailer_id = call.take_optional_text("retailer_id")?;
    let sku = sku.or(retailer_id).ok_or_else(|| Error::field("sku", "The sku field is required."))?;
    answer(call.domains.commerce.get_product(&call.caller, shop, &ProductRef::Sku(sku)).await?)
}

async fn list_products(mut call: Call) -> Result<Value, Error> {
    let shop = shop(&mut call)?;
    let page: PageQuery = call.query(&query_input(&[catalogue()], params_of::<PageQuery>()))?;
    let page = PageRequest::parse(&page, commerce::products::PER_PAGE)?;
    answer(call.domains.commerce.list_products(&call.caller, shop, page).await?)
}

async fn get_stock_levels(mut call: Call) -> Result<Value, Error> {
    let shop = shop(&mut call)?;
    let members = stock_levels_input();
    let page: PageQuery = call.query(&members)?;
    let query: LevelQuery = call.query(&members)?;
    let page = PageRequest::parse(&page, commerce::products::PER_PAGE)?;
    // read as the REST route reads `sku[]`/`sku` and `tracked_only` from its query string
    let mut filter = LevelFilter::default();
    if let Some(skus) = query.sku {
        filter.skus.extend(skus.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned));
    }
    match query.tracked_only.as_deref() {
        None => {}
        Some("true") => filter.tracked_only = true,
        Some("false") => filter.tracked_only = false,
        Some(_) => return Err(Error::field("tracked_only", "The tracked_only must be true or false.")),
    }
    answer(call.domains.commerce.levels(&call.caller, shop, &filter, page).await?)
}

async fn push_inventory(mut call: Call) -> Result<Value, Error> {
    let shop = shop(&mut call)?;
    let body: LevelsPush = call.body()?;
    answer(call.domains.commerce.push_levels(&call.caller, shop, body).await?)
}

async fn submit_product_batch(mut call: Call) -> Result<Value, Error> {
    let raw = call.take_path("catalogue")?;
    let key = call.take_idempotency_key()?;
    let body: Batch = call.body()?;
    let shop: CatalogueId = parse_id(&raw, "Catalogue")?;
    match call.domains.commerce.accept_batch(&call.caller, shop, key, body).await.map_err(key_refusal)? {
        Answer::Done(report) => answer(report),
        Answer::Replay(owner) => Ok(owner),
    }
}

async fn get_sync_report(mut call: Call) -> Result<Value, Error> {
    let shop = shop(&mut call)?;
    let sync: SyncId = parse_id(&call.take_path("sync")?, "Sync")?;
    answer(call.domains.commerce.get_sync(&call.caller, shop, sync).await?)
}
