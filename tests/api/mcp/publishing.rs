//! The publishing, feed, send and basket tools through the SDK's client: `publish_catalogue`,
//! `list_listings`, `check_drift`, `create_feed`, `run_feed`, `list_feeds`, `send_product` (on
//! `shop`) and `create_shop_link`, `send_shop_link`, `list_baskets`, `get_basket` (on `orders`)
//! run the commerce service as the REST routes do (`PATCH /catalogues/{id}`, `.../listings`,
//! `.../feeds`, `/catalogues/send-product`, `/shop-links`, `/carts`), against the sandbox chat
//! platform, with their elevations (`mcp:publish`, `mcp:send`), their permissions and their
//! tenant's rows only.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{Account, TestApp, json};
use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::support::*;
use crate::chat::{APP_SECRET, WABA, chat_id, deliver, e164, text_from};

/// Manages shops, sends and reads the chat.
const SELLER: &str = "communications.catalogue.view,communications.catalogue.manage,communications.send,\
                      communications.messages.view";
/// Every scope the shop and orders tools need.
const ALL_SCOPES: &str = "mcp:use mcp:commerce mcp:write mcp:publish mcp:send";

/// A tenant allowed `permissions` with a sandbox chat account and money in the wallet, and a
/// shop (`source_of_truth: api`) made through REST, not yet published anywhere: the account,
/// the chat webhook's path and the shop's id.
async fn seller<S, B>(app: &TestApp<S>, permissions: &str) -> (Account, String, i64)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    // the chat tests' seller: a sandbox chat account and 10,000.00 in the wallet
    let crate::chat::ChatAccount { account, token } = crate::chat::chat_account(app, permissions).await;
    let body = json!({"name": "Duka Letu", "source_of_truth": "api", "default_currency": "TZS"});
    let res = app.post("/api/v3/catalogues", &account.key, body).await;
    assert_eq!(res.status, 201, "{}", res.body);
    let shop = id_of(res.data());
    (account, format!("/hooks/chat/{token}"), shop)
}

/// [`seller`] with the shop connected to the chat catalogue and on the storefront through REST:
/// the account, the webhook's path, the shop's id and its provider catalogue id.
async fn connected<S, B>(app: &TestApp<S>) -> (Account, String, i64, String)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let (account, hook, shop) = seller(app, SELLER).await;
    let body = json!({"waba_id": WABA, "channels": ["chat", "storefront"]});
    let res = app.patch(&shop_path(shop), &account.key, body).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let catalogue = res.data()["meta_catalogue_id"].as_str().expect("a provider catalogue").to_owned();
    (account, hook, shop, catalogue)
}

/// `PUT .../products/by-sku/{sku}` through REST (200 or 201).
async fn put_product<S, B>(app: &TestApp<S>, key: &str, shop: i64, sku: &str, body: Value)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.put(&format!("{}/products/by-sku/{sku}", shop_path(shop)), key, body).await;
    assert!(res.status == 200 || res.status == 201, "PUT {sku}: {} {}", res.status, res.body);
}

/// `POST {path}` through REST, `status` expected: `data`.
async fn rest_post<S, B>(app: &TestApp<S>, key: &str, path: &str, body: Value, status: u16) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.post(path, key, body).await;
    assert_eq!(res.status, status, "{path}: {}", res.body);
    res.data().clone()
}

/// The customer `chat_id(last4)` writes to the business (a signed inbound text): their 24-hour
/// window opens.
async fn customer_writes<S, B>(app: &TestApp<S>, hook: &str, last4: &str)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let body = text_from(&chat_id(last4), &format!("wamid.IN{last4}"), "Habari, nataka kahawa");
    let res = deliver(app, hook, Some(APP_SECRET), &body).await;
    assert_eq!(res.status, 200, "{}", res.body);
}

fn shop_path(shop: i64) -> String {
    format!("/api/v3/catalogues/{shop}")
}

fn id_of(value: &Value) -> i64 {
    value["id"].as_i64().unwrap_or_else(|| panic!("id in {value}"))
}

fn total(page: &Value) -> i64 {
    page["pagination"]["total"].as_i64().unwrap_or_else(|| panic!("pagination.total in {page}"))
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_else(|| panic!("a string, got {value}")).to_owned()
}

/// A refusal for want of `scope`.
#[track_caller]
fn assert_missing_scope(error: &Value, scope: &str) {
    assert_eq!(
        (error["code"].clone(), error["reason"].clone(), error["missing_scopes"].clone()),
        (json!("permission_denied"), json!("insufficient_scope"), json!([scope])),
        "{error}"
    );
}

/// A refusal for want of a permission (not of a scope).
#[track_caller]
fn assert_no_permission(error: &Value) {
    assert_code(error, "permission_denied");
    assert!(error.get("reason").is_none(), "a permission, not a scope: {error}");
}

/// The object's member names, sorted.
fn members(value: &Value) -> Vec<String> {
    let mut names: Vec<String> =
        value.as_object().unwrap_or_else(|| panic!("an object: {value}")).keys().cloned().collect();
    names.sort();
    names
}

/// A basket without what differs between two baskets made alike (id, code, page address,
/// times).
fn made_alike(cart: &Value) -> Value {
    let mut cart = cart.clone();
    for member in ["id", "code", "url", "expires_at", "created_at", "updated_at"] {
        cart.as_object_mut().expect("a basket").remove(member);
    }
    cart
}

#[actix_web::test]
async fn publish_catalogue_connects_a_shop_as_the_rest_patch_shows_it_and_needs_mcp_publish() {
    let app = api_tests::spawn().await;
    let (account, _, shop) = seller(&app, SELLER).await;
    let viewer = app.user(account.tenant, "communications.catalogue.view").await;
    let publishing = app.mcp_connection(account.tenant, account.user, ALL_SCOPES).await;
    let writing = app.mcp_connection(account.tenant, account.user, COMMERCE_SCOPES).await;
    let viewing = app.mcp_connection(account.tenant, viewer, ALL_SCOPES).await;
    let server = app.listen();
    let connect_args = json!({"catalogue": shop, "waba_id": WABA, "channels": ["chat", "storefront"]});
    let before = rest_data(&app, &account.key, &shop_path(shop)).await;
    assert_eq!(before["is_connected_to_waba"], false, "{before}");

    // without mcp:publish: not listed, refused for the scope (check_drift too), nothing changed
    let client = connect(&server, "/mcp/v1/shop", &writing).await;
    let listed = tool_names(&client).await;
    assert!(!listed.iter().any(|t| t == "publish_catalogue" || t == "check_drift"), "{listed:?}");
    assert_missing_scope(&refused(&client, "publish_catalogue", connect_args.clone()).await, "mcp:publish");
    assert_missing_scope(&refused(&client, "check_drift", json!({"catalogue": shop})).await, "mcp:publish");
    // the scope without communications.catalogue.manage: the permission refuses
    let client = connect(&server, "/mcp/v1/shop", &viewing).await;
    assert!(!tool_names(&client).await.iter().any(|t| t == "publish_catalogue"));
    assert_no_permission(&refused(&client, "publish_catalogue", connect_args.clone()).await);
    // a member other than the four platform ones is refused by name, before anything is done
    let client = connect(&server, "/mcp/v1/shop", &publishing).await;
    let mut renamed = connect_args.clone();
    renamed["name"] = json!("Duka Jipya");
    assert_field(&refused(&client, "publish_catalogue", renamed).await, "name");
    let error = refused(&client, "publish_catalogue", json!({"catalogue": shop, "channels": ["web"]})).await;
    assert_field(&error, "channels");
    assert_eq!(rest_data(&app, &account.key, &shop_path(shop)).await, before, "the refusals changed nothing");

    // connected: the answer is the shop as REST reads it afterwards
    let published = ok(&client, "publish_catalogue", connect_args).await;
    assert_eq!(published, rest_data(&app, &account.key, &shop_path(shop)).await);
    assert_eq!(
        (
            published["is_connected_to_waba"].clone(),
            published["waba_id"].clone(),
            published["channels"].clone(),
            published["name"].clone()
        ),
        (json!(true), json!(WABA), json!(["chat", "storefront"]), json!("Duka Letu")),
        "{published}"
    );
    assert!(published["meta_catalogue_id"].as_str().is_some_and(|c| c.starts_with("sbx-cat-")), "{published}");
    assert!(published["storefront_url"].as_str().is_some_and(|u| u.contains("/shop/")), "{published}");
    // what REST's PATCH answers for the same change: the shop as it now is
    let patched = app.patch(&shop_path(shop), &account.key, json!({"channels": ["chat", "storefront"]})).await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(members(patched.data()), members(&published));
    for member in ["is_connected_to_waba", "waba_id", "meta_catalogue_id", "channels", "storefront_url"] {
        assert_eq!(patched.data()[member], published[member], "{member}");
    }

    // off the chat platform again through the tool: null disconnects, the storefront stays
    let off = ok(&client, "publish_catalogue", json!({"catalogue": shop, "waba_id": null})).await;
    assert_eq!(
        (off["is_connected_to_waba"].clone(), off["meta_catalogue_id"].clone(), off["channels"].clone()),
        (json!(false), Value::Null, json!(["storefront"])),
        "{off}"
    );
    assert_eq!(off, rest_data(&app, &account.key, &shop_path(shop)).await);
}

#[actix_web::test]
async fn list_listings_names_what_the_chat_platform_blocked_as_rest_lists_it() {
    let app = api_tests::spawn().await;
    let (account, _, shop, _) = connected(&app).await;
    put_product(&app, &account.key, shop, "KAHAWA-1", json!({"name": "Kahawa 500g", "price": 1_800_000})).await;
    put_product(&app, &account.key, shop, "CHAI-1", json!({"name": "Chai BLOCKED edition", "price": 650_000})).await;
    app.run_jobs().await;
    let reader = app.mcp_connection(account.tenant, account.user, "mcp:use mcp:commerce").await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/shop", &reader).await;
    assert!(tool_names(&client).await.iter().any(|t| t == "list_listings"), "a read: listed without elevations");

    let blocked = ok(&client, "list_listings", json!({"catalogue": shop, "state": "blocked"})).await;
    let path = format!("{}/listings?state=blocked", shop_path(shop));
    assert_eq!(blocked, rest_data(&app, &account.key, &path).await);
    assert_eq!(total(&blocked), 1, "{blocked}");
    let chai = &blocked["items"][0];
    assert_eq!(
        (chai["sku"].clone(), chai["name"].clone(), chai["platform"].clone(), chai["state"].clone()),
        (json!("CHAI-1"), json!("Chai BLOCKED edition"), json!("chat"), json!("blocked")),
        "{blocked}"
    );
    assert!(chai["problem"].as_str().is_some_and(|p| p.contains("Commerce Policies")), "{chai}");

    // every listing: two products on two platforms; filtered by platform as REST filters
    let all = ok(&client, "list_listings", json!({"catalogue": shop})).await;
    assert_eq!(all, rest_data(&app, &account.key, &format!("{}/listings", shop_path(shop))).await);
    assert_eq!(total(&all), 4, "{all}");
    let synced = ok(&client, "list_listings", json!({"catalogue": shop, "platform": "chat", "state": "synced"})).await;
    let path = format!("{}/listings?platform=chat&state=synced", shop_path(shop));
    assert_eq!(synced, rest_data(&app, &account.key, &path).await);
    assert_eq!((total(&synced), synced["items"][0]["sku"].clone()), (1, json!("KAHAWA-1")), "{synced}");
    let page = ok(&client, "list_listings", json!({"catalogue": shop, "limit": 1, "page": 2})).await;
    assert_eq!(page, rest_data(&app, &account.key, &format!("{}/listings?limit=1&page=2", shop_path(shop))).await);

    // unknown states, platforms and members are refused by name
    assert_field(&refused(&client, "list_listings", json!({"catalogue": shop, "state": "lost"})).await, "state");
    let error = refused(&client, "list_listings", json!({"catalogue": shop, "platform": "web"})).await;
    assert_field(&error, "platform");
    assert_field(&refused(&client, "list_listings", json!({"catalogue": shop, "colour": "red"})).await, "colour");
    assert_field(&refused(&client, "list_listings", json!({"state": "blocked"})).await, "catalogue");
}

#[actix_web::test]
async fn check_drift_pushes_the_shop_s_price_back_over_the_platform_s_edit() {
    let app = api_tests::spawn().await;
    let (account, _, shop, catalogue) = connected(&app).await;
    put_product(&app, &account.key, shop, "KAHAWA-1", json!({"name": "Kahawa 500g", "price": 1_800_000})).await;
    app.run_jobs().await;
    let token = app.mcp_connection(account.tenant, account.user, ALL_SCOPES).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/shop", &token).await;

    let clean = ok(&client, "check_drift", json!({"catalogue": shop})).await;
    assert_eq!((clean["checked"].clone(), clean["drifted"].clone()), (json!(1), json!(0)), "{clean}");

    // the merchant edits the price in the platform's own tool
    let edits = [("price_minor".to_owned(), "1750000".to_owned())];
    app.messaging.sandbox_catalogue_edit(account.tenant, &catalogue, "KAHAWA-1", &edits).await.expect("edit");
    let report = ok(&client, "check_drift", json!({"catalogue": shop})).await;
    assert_eq!(
        report,
        json!({"catalogue_id": shop, "checked": 1, "drifted": 1, "pushed": 1, "pulled": 0, "missing": 0}),
        "{report}"
    );
    let kahawa = rest_data(&app, &account.key, &format!("{}/products/by-sku/KAHAWA-1", shop_path(shop))).await;
    assert_eq!(kahawa["price"], 1_800_000, "the shop's price stays: {kahawa}");
    let chat = ok(&client, "list_listings", json!({"catalogue": shop, "platform": "chat"})).await;
    assert_eq!(chat["items"][0]["state"], "synced", "{chat}");
    // the platform has the shop's price again: nothing to settle
    let again = ok(&client, "check_drift", json!({"catalogue": shop})).await;
    assert_eq!((again["drifted"].clone(), again["pushed"].clone()), (json!(0), json!(0)), "{again}");
    assert_code(&refused(&client, "check_drift", json!({"catalogue": 999_999})).await, "not_found");
}

/// A Meta commerce-manager export of two products.
const CSV: &str = "id,title,price,availability\n\
                   K-1,Kahawa 1kg,45000.00 TZS,in stock\n\
                   K-2,Chai 500g,12500.00 TZS,in stock\n";

#[actix_web::test]
async fn create_feed_pulls_a_file_into_a_sync_run_and_run_feed_queues_another() {
    let app = api_tests::spawn().await;
    let files = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/products.csv"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(CSV.as_bytes().to_vec(), "text/csv"))
        .mount(&files)
        .await;
    let url = format!("{}/products.csv", files.uri());
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let duka = shop(&app, &[]).await;
    let token = app.mcp_connection(duka.tenant, duka.user, COMMERCE_SCOPES).await;
    let reader = app.mcp_connection(duka.tenant, duka.user, "mcp:use mcp:commerce").await;
    let server = app.listen();
    let feeds = format!("{}/feeds", shop_path(duka.id));

    // feeds write products: mcp:write
    let client = connect(&server, "/mcp/v1/shop", &reader).await;
    let args = json!({"catalogue": duka.id, "url": url});
    assert_missing_scope(&refused(&client, "create_feed", args.clone()).await, "mcp:write");
    assert_eq!(total(&ok(&client, "list_feeds", json!({"catalogue": duka.id})).await), 0, "nothing made");

    let client = connect(&server, "/mcp/v1/shop", &token).await;
    let feed = ok(&client, "create_feed", args).await;
    let id = id_of(&feed);
    assert_eq!(
        (feed["url"].clone(), feed["schedule"].clone(), feed["mode"].clone(), feed["enabled"].clone()),
        (json!(url), json!("daily"), json!("replace"), json!(true)),
        "{feed}"
    );
    let sync = feed["last_sync_id"].as_i64().unwrap_or_else(|| panic!("last_sync_id in {feed}"));
    let queued = ok(&client, "get_sync_report", json!({"catalogue": duka.id, "sync": sync})).await;
    assert_eq!((queued["status"].clone(), queued["kind"].clone()), (json!("queued"), json!("feed")), "{queued}");
    assert_eq!(files.received_requests().await.expect("recorded").len(), 0, "the pull is a job");

    app.run_jobs().await;
    let done = ok(&client, "get_sync_report", json!({"catalogue": duka.id, "sync": sync})).await;
    assert_eq!(done, rest_data(&app, &duka.key, &format!("{}/syncs/{sync}", shop_path(duka.id))).await);
    assert_eq!(
        (done["status"].clone(), done["feed_id"].clone(), done["created"].clone(), done["rejected"].clone()),
        (json!("completed"), json!(id), json!(2), json!(0)),
        "{done}"
    );
    let kahawa = ok(&client, "get_product_by_sku", json!({"catalogue": duka.id, "sku": "K-1"})).await;
    assert_eq!((kahawa["name"].clone(), kahawa["price"].clone()), (json!("Kahawa 1kg"), json!(4_500_000)));

    let listed = ok(&client, "list_feeds", json!({"catalogue": duka.id})).await;
    assert_eq!(listed, rest_data(&app, &duka.key, &feeds).await);
    assert_eq!((total(&listed), id_of(&listed["items"][0])), (1, id), "{listed}");
    assert_eq!(listed["items"][0]["last_sync_id"], sync, "{listed}");

    // pulled again by hand: a queued run of the feed, the feed's last_sync_id
    let run = ok(&client, "run_feed", json!({"catalogue": duka.id, "feed": id})).await;
    let again = id_of(&run);
    assert_ne!(again, sync);
    assert_eq!(
        (run["status"].clone(), run["kind"].clone(), run["feed_id"].clone()),
        (json!("queued"), json!("feed"), json!(id)),
        "{run}"
    );
    assert_eq!(run, rest_data(&app, &duka.key, &format!("{}/syncs/{again}", shop_path(duka.id))).await);
    assert_eq!(rest_data(&app, &duka.key, &format!("{feeds}/{id}")).await["last_sync_id"], again);
    app.run_jobs().await;
    let pulled = ok(&client, "get_sync_report", json!({"catalogue": duka.id, "sync": again})).await;
    assert_eq!((pulled["status"].clone(), pulled["unchanged"].clone()), (json!("completed"), json!(2)), "{pulled}");

    // the request checks are the service's
    assert_field(&refused(&client, "create_feed", json!({"catalogue": duka.id})).await, "url");
    let error = refused(&client, "create_feed", json!({"catalogue": duka.id, "url": url, "schedule": "often"})).await;
    assert_field(&error, "schedule");
    let error = refused(&client, "create_feed", json!({"catalogue": duka.id, "url": "ftp://127.0.0.1/x.csv"})).await;
    assert_field(&error, "url");
    assert_code(&refused(&client, "run_feed", json!({"catalogue": duka.id, "feed": 999_999})).await, "not_found");
    assert_field(&refused(&client, "run_feed", json!({"catalogue": duka.id})).await, "feed");
    assert_eq!(total(&ok(&client, "list_feeds", json!({"catalogue": duka.id})).await), 1, "one feed");
}

#[actix_web::test]
async fn create_shop_link_answers_the_link_as_rest_does_and_never_sends() {
    let app = api_tests::spawn().await;
    let (account, _, shop) = seller(&app, SELLER).await;
    put_product(&app, &account.key, shop, "K-1", json!({"name": "Kahawa 500g", "price": 500_000})).await;
    put_product(&app, &account.key, shop, "C-1", json!({"name": "Chai 250g", "price": 300_000})).await;
    let token = app.mcp_connection(account.tenant, account.user, COMMERCE_SCOPES).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/orders", &token).await;
    let body = json!({"catalogue_id": shop, "items": [{"sku": "K-1", "quantity": 2}, {"sku": "NOPE"}],
                      "note": "Kwa Amina"});

    let made = ok(&client, "create_shop_link", body.clone()).await;
    let rest = rest_post(&app, &account.key, "/api/v3/shop-links", body, 201).await;
    assert_eq!(members(&made), members(&rest));
    assert_eq!(
        (made["sent"].clone(), made["send_error"].clone(), made["problems"].clone()),
        (rest["sent"].clone(), rest["send_error"].clone(), rest["problems"].clone())
    );
    assert_eq!(made["sent"], false);
    assert_eq!(made["problems"][0]["sku"], "NOPE", "{made}");
    assert_eq!(made_alike(&made["cart"]), made_alike(&rest["cart"]));
    let cart = &made["cart"];
    assert_eq!(
        (cart["status"].clone(), cart["subtotal_minor"].clone(), cart["conversation_id"].clone()),
        (json!("open"), json!(1_000_000), Value::Null),
        "{cart}"
    );
    assert_eq!(made["url"], cart["url"]);
    let code = text(&cart["code"]);
    assert_eq!(&rest_data(&app, &account.key, &format!("/api/v3/carts/{code}")).await, cart);

    // the recipient members belong to send_shop_link: refused by name, nothing made
    for (member, value) in [("to", json!(e164("0000"))), ("conversation_id", json!(1)), ("message", json!("Karibu"))] {
        let mut args = json!({"catalogue_id": shop, "sku": "K-1"});
        args[member] = value;
        assert_field(&refused(&client, "create_shop_link", args).await, member);
    }
    assert_field(&refused(&client, "create_shop_link", json!({"catalogue_id": shop})).await, "items");
    assert_code(
        &refused(&client, "create_shop_link", json!({"catalogue_id": 999_999, "sku": "K-1"})).await,
        "not_found",
    );
    assert_eq!(total(&rest_data(&app, &account.key, "/api/v3/carts").await), 2, "the tool's and REST's");
}

#[actix_web::test]
async fn send_shop_link_sends_in_an_open_window_with_mcp_send_and_communications_send() {
    let app = api_tests::spawn().await;
    let (account, hook, shop) = seller(&app, SELLER).await;
    put_product(&app, &account.key, shop, "K-1", json!({"name": "Kahawa 500g", "price": 500_000})).await;
    customer_writes(&app, &hook, "0000").await;
    let sender = app.mcp_connection(account.tenant, account.user, ALL_SCOPES).await;
    let no_send_scope = app.mcp_connection(account.tenant, account.user, COMMERCE_SCOPES).await;
    let manager = app.user(account.tenant, CATALOGUE_MANAGER).await;
    let no_send_permission = app.mcp_connection(account.tenant, manager, ALL_SCOPES).await;
    let server = app.listen();
    let args = json!({"sku": "K-1", "to": e164("0000")});

    // without mcp:send: not listed, refused for the scope
    let client = connect(&server, "/mcp/v1/orders", &no_send_scope).await;
    assert!(!tool_names(&client).await.iter().any(|t| t == "send_shop_link"));
    assert_missing_scope(&refused(&client, "send_shop_link", args.clone()).await, "mcp:send");
    // without communications.send: not listed, refused for the permission
    let client = connect(&server, "/mcp/v1/orders", &no_send_permission).await;
    assert!(!tool_names(&client).await.iter().any(|t| t == "send_shop_link"));
    assert_no_permission(&refused(&client, "send_shop_link", args.clone()).await);
    assert_eq!(total(&rest_data(&app, &account.key, "/api/v3/carts").await), 0, "nothing made by the refusals");

    let client = connect(&server, "/mcp/v1/orders", &sender).await;
    assert!(tool_names(&client).await.iter().any(|t| t == "send_shop_link"));
    let sent = ok(&client, "send_shop_link", args.clone()).await;
    assert_eq!((sent["sent"].clone(), sent["send_error"].clone()), (json!(true), Value::Null), "{sent}");
    let cart = sent["cart"].clone();
    assert_eq!((cart["status"].clone(), cart["customer"].clone()), (json!("sent"), json!(e164("0000"))), "{cart}");
    let conversation = cart["conversation_id"].as_i64().unwrap_or_else(|| panic!("a conversation: {cart}"));
    let uid = text(&cart["message_id"]);
    let message = rest_data(&app, &account.key, &format!("/api/v3/chat/{uid}")).await;
    assert!(message["body"].as_str().is_some_and(|b| b.contains(&text(&sent["url"]))), "the link in {message}");
    // in the conversation named, with the business's words
    let args2 = json!({"sku": "K-1", "conversation_id": conversation, "message": "Kikapu chako"});
    let second = ok(&client, "send_shop_link", args2).await;
    assert_eq!((second["sent"].clone(), second["cart"]["conversation_id"].clone()), (json!(true), json!(conversation)));
    let uid = text(&second["cart"]["message_id"]);
    let message = rest_data(&app, &account.key, &format!("/api/v3/chat/{uid}")).await;
    assert_eq!(message["body"], format!("Kikapu chako\n{}", text(&second["url"])));

    // a recipient is required; a customer who never wrote has no window: nothing made
    assert_field(&refused(&client, "send_shop_link", json!({"sku": "K-1"})).await, "to");
    let error = refused(&client, "send_shop_link", json!({"sku": "K-1", "to": e164("0007")})).await;
    assert_eq!(
        (error["code"].clone(), error["reason"].clone()),
        (json!("conflict"), json!("window_closed")),
        "{error}"
    );

    // the reads agree with REST
    let baskets = ok(&client, "list_baskets", json!({})).await;
    assert_eq!(baskets, rest_data(&app, &account.key, "/api/v3/carts").await);
    assert_eq!(total(&baskets), 2, "{baskets}");
    let sent_ones = ok(&client, "list_baskets", json!({"status": "sent", "limit": 1})).await;
    assert_eq!(sent_ones, rest_data(&app, &account.key, "/api/v3/carts?status=sent&limit=1").await);
    assert_eq!((total(&sent_ones), id_of(&sent_ones["items"][0])), (2, id_of(&second["cart"])), "newest first");
    assert_eq!(total(&ok(&client, "list_baskets", json!({"status": "ordered"})).await), 0);
    assert_field(&refused(&client, "list_baskets", json!({"status": "lost"})).await, "status");
    let code = text(&cart["code"]);
    let basket = ok(&client, "get_basket", json!({"ref": code})).await;
    assert_eq!(basket, rest_data(&app, &account.key, &format!("/api/v3/carts/{code}")).await);
    assert_eq!(basket, cart);
    assert_eq!(ok(&client, "get_basket", json!({"ref": id_of(&cart).to_string()})).await, basket);
    assert_code(&refused(&client, "get_basket", json!({"ref": "ZZZZZ"})).await, "not_found");
    assert_field(&refused(&client, "get_basket", json!({})).await, "ref");

    // a day later the window is closed: a conflict, and nothing made
    app.advance(time::Duration::hours(25)).await;
    for recipient in [json!({"sku": "K-1", "to": e164("0000")}), json!({"sku": "K-1", "conversation_id": conversation})]
    {
        let error = refused(&client, "send_shop_link", recipient).await;
        assert_eq!((error["code"].clone(), error["reason"].clone()), (json!("conflict"), json!("window_closed")));
    }
    assert_eq!(total(&ok(&client, "list_baskets", json!({})).await), 2);
}

#[actix_web::test]
async fn list_baskets_filters_by_conversation_as_rest_does() {
    // `conversation_id` is a number in the tool's input schema (CartFilter's i64), as docs/mcp.md
    // says query-style tools take numbers as numbers; REST's `?conversation_id=` filters.
    let app = api_tests::spawn().await;
    let (account, hook, shop) = seller(&app, SELLER).await;
    put_product(&app, &account.key, shop, "K-1", json!({"name": "Kahawa 500g", "price": 500_000})).await;
    customer_writes(&app, &hook, "0000").await;
    let sent =
        rest_post(&app, &account.key, "/api/v3/shop-links", json!({"sku": "K-1", "to": e164("0000")}), 201).await;
    rest_post(&app, &account.key, "/api/v3/shop-links", json!({"sku": "K-1"}), 201).await;
    let conversation = sent["cart"]["conversation_id"].as_i64().unwrap_or_else(|| panic!("a conversation: {sent}"));
    let token = app.mcp_connection(account.tenant, account.user, COMMERCE_SCOPES).await;
    let server = app.listen();
    let client = connect(&server, "/mcp/v1/orders", &token).await;

    let rest = rest_data(&app, &account.key, &format!("/api/v3/carts?conversation_id={conversation}")).await;
    assert_eq!((total(&rest), id_of(&rest["items"][0])), (1, id_of(&sent["cart"])), "{rest}");
    let listed = ok(&client, "list_baskets", json!({"conversation_id": conversation})).await;
    assert_eq!(listed, rest);
    // the id as text, as a model may send it
    let listed = ok(&client, "list_baskets", json!({"conversation_id": conversation.to_string()})).await;
    assert_eq!(listed, rest);
}

#[actix_web::test]
async fn send_product_answers_the_message_as_rest_does_and_needs_mcp_send() {
    let app = api_tests::spawn().await;
    let (account, _, shop, _) = connected(&app).await;
    put_product(&app, &account.key, shop, "KAHAWA-1", json!({"name": "Kahawa 500g", "price": 650_000})).await;
    app.run_jobs().await;
    let sender = app.mcp_connection(account.tenant, account.user, ALL_SCOPES).await;
    let writer = app.mcp_connection(account.tenant, account.user, COMMERCE_SCOPES).await;
    let server = app.listen();
    let body = json!({"to": e164("0000"), "catalogue_id": shop, "product_retailer_id": "KAHAWA-1", "body": "Mpya"});

    let client = connect(&server, "/mcp/v1/shop", &writer).await;
    let listed = tool_names(&client).await;
    assert!(!listed.iter().any(|t| t.starts_with("send_")), "{listed:?}");
    assert_missing_scope(&refused(&client, "send_product", body.clone()).await, "mcp:send");
    let sandbox = app.messaging.gateways().chat_sandbox();
    assert!(sandbox.sent_to(&e164("0000")).is_empty(), "nothing sent");

    let client = connect(&server, "/mcp/v1/shop", &sender).await;
    let sent = ok(&client, "send_product", body.clone()).await;
    let rest = rest_post(&app, &account.key, "/api/v3/catalogues/send-product", body, 201).await;
    assert_eq!(members(&sent), members(&rest));
    assert_eq!((sent["platform"].clone(), sent["status"].clone()), (rest["platform"].clone(), rest["status"].clone()));
    assert_eq!((sent["platform"].clone(), sent["status"].clone()), (json!("chat"), json!("sent")), "{sent}");
    let message_id = text(&sent["message_id"]);
    assert!(!message_id.is_empty() && message_id != text(&rest["message_id"]), "{sent} {rest}");
    let stored = rest_data(&app, &account.key, &format!("/api/v3/chat/{}", text(&sent["uid"]))).await;
    assert_eq!(
        (stored["gateway_message_id"].clone(), stored["recipient"].clone()),
        (json!(message_id), json!(e164("0000")))
    );
    assert_eq!(stored["metadata"]["interactive"]["action"]["product_retailer_id"], "KAHAWA-1", "{stored}");
    assert_eq!(sandbox.sent_to(&e164("0000")).len(), 2, "the tool's and REST's");

    // the sandbox refuses numbers ending 0001: the provider's failure, as REST's 502
    let refused_to = json!({"to": e164("0001"), "catalogue_id": shop, "product_retailer_id": "KAHAWA-1"});
    let error = refused(&client, "send_product", refused_to).await;
    assert_code(&error, "provider_failure");
    assert!(error["message"].as_str().is_some_and(|m| m.contains("131026")), "{error}");
    // a product not published there is the service's validation
    let missing = json!({"to": e164("0000"), "catalogue_id": shop, "product_retailer_id": "MISSING-1"});
    assert_field(&refused(&client, "send_product", missing).await, "product_retailer_id");
}

#[actix_web::test]
async fn another_tenants_shop_feeds_and_baskets_are_not_found_through_the_new_tools() {
    let app = api_tests::spawn().await;
    let (owner, _, shop, _) = connected(&app).await;
    put_product(&app, &owner.key, shop, "K-1", json!({"name": "Kahawa 500g", "price": 500_000})).await;
    app.run_jobs().await;
    let link =
        rest_post(&app, &owner.key, "/api/v3/shop-links", json!({"catalogue_id": shop, "sku": "K-1"}), 201).await;
    let code = text(&link["cart"]["code"]);
    let (stranger, _, theirs) = seller(&app, SELLER).await;
    let token = app.mcp_connection(stranger.tenant, stranger.user, ALL_SCOPES).await;
    let server = app.listen();
    let client = connect(&server, "/mcp", &token).await;
    let before = rest_data(&app, &owner.key, &shop_path(shop)).await;

    for (tool, args) in [
        ("publish_catalogue", json!({"catalogue": shop, "channels": []})),
        ("publish_catalogue", json!({"catalogue": shop, "waba_id": null})),
        ("list_listings", json!({"catalogue": shop})),
        ("check_drift", json!({"catalogue": shop})),
        ("create_feed", json!({"catalogue": shop, "url": "http://127.0.0.1:9/products.csv"})),
        ("list_feeds", json!({"catalogue": shop})),
        ("get_basket", json!({"ref": code})),
        ("get_basket", json!({"ref": id_of(&link["cart"]).to_string()})),
        ("create_shop_link", json!({"catalogue_id": shop, "sku": "K-1"})),
        ("send_product", json!({"to": e164("0000"), "catalogue_id": shop, "product_retailer_id": "K-1"})),
    ] {
        assert_code(&refused(&client, tool, args).await, "not_found");
    }
    // their own rows only
    assert_eq!(total(&ok(&client, "list_baskets", json!({})).await), 0);
    assert_eq!(total(&ok(&client, "list_listings", json!({"catalogue": theirs})).await), 0);
    // the owner's shop is untouched: still connected, no feed, its basket open
    assert_eq!(rest_data(&app, &owner.key, &shop_path(shop)).await, before);
    assert_eq!(total(&rest_data(&app, &owner.key, &format!("{}/feeds", shop_path(shop))).await), 0);
    assert_eq!(rest_data(&app, &owner.key, &format!("/api/v3/carts/{code}")).await["status"], "open");
    assert!(app.messaging.gateways().chat_sandbox().sent_to(&e164("0000")).is_empty(), "nothing sent");
}
