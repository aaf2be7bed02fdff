//! The `shop` tools: catalogues, products by sku, stock levels, inventory push, product batches
//! and their sync reports, publishing (platforms, listings, drift), feeds and product sends,
//! over `commerce::CommerceService`, each calling the method its REST route
//! (`apps/gateway/src/v3/catalogues.rs`, `sends.rs`) calls, with the same permission
//! (`communications.catalogue.view` to read, `.manage` to write, `communications.send` to send).
//! Publishing asks `mcp:publish`, sending `mcp:send`.

use commerce::catalogues::{Catalogue, CatalogueSettings};
use commerce::drift::DriftReport;
use commerce::feeds::{Feed, FeedId, NewFeed};
use commerce::products::{Product, ProductRef};
use commerce::publish::{ListingFilter, ProductListing};
use commerce::sends::{CatalogueSend, ProductListSend, ProductSend, ProductSent};
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
        Tool {
            name: "publish_catalogue",
            title: "Publish a shop",
            description: "Sets where a shop is published, as PATCH /catalogues/{catalogue} does with these members: waba_id connects it to that business account's chat catalogue (creating the provider catalogue, or adopting meta_catalogue_id), null disconnects; is_connected_to_waba true connects to the only business account; channels lists the platforms (chat, storefront; may be empty). New platforms list every product of the shop; the chat catalogue is sent them by a job (watch list_listings). Answers the shop with its storefront_url.",
            server: SERVER,
            elevation: Some(Elevation::Publish),
            permission: Some(Permission::CATALOGUE_MANAGE),
            effect: Effect::Update,
            input: publish_input,
            output: schema_of::<Catalogue>,
            call: |call| Box::pin(publish_catalogue(call)),
        },
        Tool {
            name: "list_listings",
            title: "List a shop's listings",
            description: "Each product's listing per platform (chat, storefront) with its state (pending, syncing, synced, failed, blocked, drifted) and the platform's problem text, 25 a page; filter by platform and state, e.g. state blocked to see what the chat catalogue refused and why.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::CATALOGUE_VIEW),
            effect: Effect::Read,
            input: || query_input(&[catalogue()], listing_params()),
            output: || with_def::<ProductListing>(schema_of::<Page<ProductListing>>()),
            call: |call| Box::pin(list_listings(call)),
        },
        Tool {
            name: "check_drift",
            title: "Check a shop for drift",
            description: "Compares the chat catalogue's copy of every listed product with the shop's now (the service also does it hourly): differing listings become drifted, product.drifted is sent, and the shop's source_of_truth settles them (api or svc push the shop's copy back, platform pulls the platform's values in). Stock and image_url are never compared. Answers the counts checked, drifted, pushed, pulled and missing.",
            server: SERVER,
            elevation: Some(Elevation::Publish),
            permission: Some(Permission::CATALOGUE_MANAGE),
            effect: Effect::Update,
            input: || object(&[catalogue()]),
            output: schema_of::<DriftReport>,
            call: |call| Box::pin(check_drift(call)),
        },
        Tool {
            name: "create_feed",
            title: "Create a product feed",
            description: "Makes a feed of a shop, as POST /catalogues/{catalogue}/feeds does: a CSV or JSON product file at url pulled on a schedule (hourly, daily (default), weekly, manual) with an optional mapping of product fields to the file's columns, mode replace (default: products the file leaves out are retired) or upsert. The first pull runs at once: its sync run is last_sync_id (read it with get_sync_report). A feed switches off after ten failed pulls in a row.",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: Some(Permission::CATALOGUE_MANAGE),
            effect: Effect::Create,
            input: || with_members(schema_of::<NewFeed>(), &[catalogue()]),
            output: schema_of::<Feed>,
            call: |call| Box::pin(create_feed(call)),
        },
        Tool {
            name: "run_feed",
            title: "Pull a feed now",
            description: "Pulls a shop's feed now, also one switched off (a pull that succeeds switches it back on). Answers the queued sync run.",
            server: SERVER,
            elevation: Some(Elevation::Write),
            permission: Some(Permission::CATALOGUE_MANAGE),
            effect: Effect::Update,
            input: || object(&[catalogue(), feed()]),
            output: schema_of::<Report>,
            call: |call| Box::pin(run_feed(call)),
        },
        Tool {
            name: "list_feeds",
            title: "List a shop's feeds",
            description: "A shop's feeds, oldest first (25 a page), each with its schedule, whether it is on, its consecutive failures and its last run.",
            server: SERVER,
            elevation: None,
            permission: Some(Permission::CATALOGUE_VIEW),
            effect: Effect::Read,
            input: || query_input(&[catalogue()], params_of::<PageQuery>()),
            output: || with_def::<Feed>(schema_of::<Page<Feed>>()),
            call: |call| Box::pin(list_feeds(call)),
        },
        Tool {
            name: "send_product",
            title: "Send a product",
            description: "Sends one product to a customer, as POST /catalogues/send-product does: on the chat platform (default) a product message from the shop's chat catalogue (the product must be published there), on storefront a text with the product's storefront link. body up to 1,024, footer up to 60. A provider refusal (e.g. outside the customer's 24-hour window) is refused as provider_failure.",
            server: SERVER,
            elevation: Some(Elevation::Send),
            permission: Some(Permission::SEND),
            effect: Effect::Create,
            input: schema_of::<ProductSend>,
            output: schema_of::<ProductSent>,
            call: |call| Box::pin(send_product(call)),
        },
        Tool {
            name: "send_product_list",
            title: "Send a product list",
            description: "Sends a list of up to 30 products from the shop's chat catalogue in 1 to 10 titled sections (title up to 24), with a header (up to 60) and a body (up to 1,024), as POST /catalogues/send-product-list does; every product must be published on the chat catalogue.",
            server: SERVER,
            elevation: Some(Elevation::Send),
            permission: Some(Permission::SEND),
            effect: Effect::Create,
            input: schema_of::<ProductListSend>,
            output: schema_of::<ProductSent>,
            call: |call| Box::pin(send_product_list(call)),
        },
        Tool {
            name: "send_catalogue",
            title: "Send the catalogue",
            description: "Sends the shop's whole chat catalogue to a customer (a catalogue message with a thumbnail product), as POST /catalogues/send-catalogue does.",
            server: SERVER,
            elevation: Some(Elevation::Send),
            permission: Some(Permission::SEND),
            effect: Effect::Create,
            input: schema_of::<CatalogueSend>,
            output: schema_of::<ProductSent>,
            call: |call| Box::pin(send_catalogue(call)),
        },
    ]
}

fn feed() -> (&'static str, Value, bool) {
    ("feed", numeric_id("The feed's id."), true)
}

/// The platform members of `CatalogueSettings`.
fn publish_input() -> Value {
    let settings = schema_of::<CatalogueSettings>();
    let properties = &settings["properties"];
    let member = |name: &str| properties.get(name).cloned().unwrap_or_else(|| json!({}));
    let mut input = object(&[
        catalogue(),
        ("waba_id", member("waba_id"), false),
        ("meta_catalogue_id", member("meta_catalogue_id"), false),
        ("is_connected_to_waba", member("is_connected_to_waba"), false),
        ("channels", member("channels"), false),
    ]);
    // the members' references (`Platform`) resolve in the settings' own definitions
    if let Some(defs) = settings.get("$defs") {
        input["$defs"] = defs.clone();
    }
    input
}

fn listing_params() -> Vec<utoipa::openapi::path::Parameter> {
    let mut params = params_of::<PageQuery>();
    params.extend(params_of::<ListingFilter>());
    params
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

async fn publish_catalogue(mut call: Call) -> Result<Value, Error> {
    let shop = shop(&mut call)?;
    // only the platform members: the other settings are not this tool's
    let members = publish_input();
    if let Some(unknown) = call.args.keys().find(|name| members["properties"].get(name.as_str()).is_none()) {
        return Err(Error::field(
            unknown.clone(),
            "This tool reads waba_id, meta_catalogue_id, is_connected_to_waba and channels.",
        ));
    }
    let body: CatalogueSettings = call.body()?;
    answer(call.domains.commerce.update_catalogue(&call.caller, shop, body).await?)
}

async fn list_listings(mut call: Call) -> Result<Value, Error> {
    let shop = shop(&mut call)?;
    let members = query_input(&[catalogue()], listing_params());
    let page: PageQuery = call.query(&members)?;
    let filter: ListingFilter = call.query(&members)?;
    let page = PageRequest::parse(&page, commerce::catalogues::PER_PAGE)?;
    answer(call.domains.commerce.listings(&call.caller, shop, filter, page).await?)
}

async fn check_drift(mut call: Call) -> Result<Value, Error> {
    let shop = shop(&mut call)?;
    answer(call.domains.commerce.check_drift_for(&call.caller, shop).await?)
}

async fn create_feed(mut call: Call) -> Result<Value, Error> {
    let shop = shop(&mut call)?;
    let body: NewFeed = call.body()?;
    answer(call.domains.commerce.create_feed(&call.caller, shop, body).await?)
}

async fn run_feed(mut call: Call) -> Result<Value, Error> {
    let shop = shop(&mut call)?;
    let feed: FeedId = parse_id(&call.take_path("feed")?, "Feed")?;
    answer(call.domains.commerce.run_feed(&call.caller, shop, feed).await?)
}

async fn list_feeds(mut call: Call) -> Result<Value, Error> {
    let shop = shop(&mut call)?;
    let page: PageQuery = call.query(&query_input(&[catalogue()], params_of::<PageQuery>()))?;
    let page = PageRequest::parse(&page, commerce::catalogues::PER_PAGE)?;
    answer(call.domains.commerce.list_feeds(&call.caller, shop, page).await?)
}

async fn send_product(mut call: Call) -> Result<Value, Error> {
    let body: ProductSend = call.body()?;
    answer(call.domains.commerce.send_product(&call.caller, body).await?)
}

async fn send_product_list(mut call: Call) -> Result<Value, Error> {
    let body: ProductListSend = call.body()?;
    answer(call.domains.commerce.send_product_list(&call.caller, body).await?)
}

async fn send_catalogue(mut call: Call) -> Result<Value, Error> {
    let body: CatalogueSend = call.body()?;
    answer(call.domains.commerce.send_catalogue(&call.caller, body).await?)
}
