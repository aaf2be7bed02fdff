//! Publishing (issue 18): a shop connected to a business account's chat catalogue (the sandbox
//! platform) and its storefront page; listings and their states, `product.blocked` once per
//! product and platform, sync reports' `platforms`, drift settled by `source_of_truth`, and
//! the refusals of a connection.

use api_tests::{Account, TestApp};
use kernel::TenantId;
use providers::catalogue::CatalogueItem;
use serde_json::{Value, json};

use super::support::{CATALOGUES, MANAGER, assert_status, events, id_of, put_product, shop_path, sku_path};
use crate::chat::{BUSINESS, PHONE_ID, WABA, add_account};

/// A tenant with a sandbox chat account and a shop: `(account, shop id)`.
async fn connected_shop<S, B>(app: &TestApp<S>, source_of_truth: &str) -> (Account, i64, Value)
where
    S: actix_web::dev::Service<
            actix_http::Request,
            Response = actix_web::dev::ServiceResponse<B>,
            Error = actix_web::Error,
        >,
    B: actix_web::body::MessageBody,
{
    let account = app.account(MANAGER).await;
    add_account(app, account.tenant, WABA, PHONE_ID, BUSINESS).await;
    let res =
        app.post(CATALOGUES, &account.key, json!({ "name": "Duka Letu", "source_of_truth": source_of_truth })).await;
    assert_status(&res, 201);
    let shop = id_of(res.data());
    let res =
        app.patch(&shop_path(shop), &account.key, json!({ "waba_id": WABA, "channels": ["chat", "storefront"] })).await;
    assert_status(&res, 200);
    (account, shop, res.data().clone())
}

fn listing<'a>(product: &'a Value, platform: &str) -> &'a Value {
    product["listings"]
        .as_array()
        .and_then(|l| l.iter().find(|l| l["platform"] == platform))
        .unwrap_or_else(|| panic!("a {platform} listing in {product}"))
}

async fn catalogue_copy<S>(app: &TestApp<S>, tenant: TenantId, catalogue: &str, sku: &str) -> Option<CatalogueItem> {
    let chat = app.messaging.chat_catalogue(tenant, Some(WABA)).await.expect("the chat catalogue");
    chat.gateway.items(catalogue, &[sku.to_owned()]).await.expect("items").pop()
}

#[actix_web::test]
async fn a_connected_shop_publishes_to_its_chat_catalogue_and_storefront() {
    let app = api_tests::spawn().await;
    let (account, shop, connected) = connected_shop(&app, "api").await;
    assert_eq!(connected["is_connected_to_waba"], true);
    assert_eq!(connected["waba_id"], WABA);
    assert_eq!(connected["channels"], json!(["chat", "storefront"]));
    let catalogue = connected["meta_catalogue_id"].as_str().expect("a provider catalogue").to_owned();
    assert!(catalogue.starts_with("sbx-cat-"), "{catalogue}");
    assert!(connected["storefront_url"].as_str().is_some_and(|u| u.starts_with("http://127.0.0.1:8080/shop/")));

    let kahawa =
        put_product(&app, &account.key, shop, "KAHAWA-1", json!({ "name": "Kahawa 500g", "price": 1_800_000 })).await;
    // the storefront shows it at once; the chat catalogue once the publish job sent it
    assert_eq!(listing(&kahawa, "storefront")["state"], "synced");
    assert_eq!(listing(&kahawa, "chat")["state"], "pending");
    assert_eq!(kahawa["sync_status"], "pending");
    assert!(catalogue_copy(&app, account.tenant, &catalogue, "KAHAWA-1").await.is_none());
    app.run_jobs().await;
    let kahawa = app.get(&sku_path(shop, "KAHAWA-1"), &account.key).await;
    assert_eq!(listing(kahawa.data(), "chat")["state"], "synced", "{}", kahawa.body);
    assert_eq!(kahawa.data()["sync_status"], "synced");
    let copy = catalogue_copy(&app, account.tenant, &catalogue, "KAHAWA-1").await.expect("on the platform");
    assert_eq!((copy.name.as_str(), copy.price_minor, copy.currency.as_str()), ("Kahawa 500g", 1_800_000, "TZS"));

    // once live, the code is frozen
    let res = app.put(&sku_path(shop, "KAHAWA-1"), &account.key, json!({ "sku": "KAHAWA-2" })).await;
    assert_status(&res, 409);

    // deleting takes it off the storefront at once and off the chat catalogue by the next publish
    let res = app.delete(&sku_path(shop, "KAHAWA-1"), &account.key).await;
    assert_status(&res, 200);
    app.run_jobs().await;
    assert!(catalogue_copy(&app, account.tenant, &catalogue, "KAHAWA-1").await.is_none(), "deleted on the platform");
}

#[actix_web::test]
async fn a_refused_product_is_blocked_with_the_platform_s_words_and_announced_once() {
    let app = api_tests::spawn().await;
    let (account, shop, _) = connected_shop(&app, "api").await;
    put_product(&app, &account.key, shop, "CHAI-1", json!({ "name": "Chai BLOCKED edition", "price": 650_000 })).await;
    app.run_jobs().await;
    let chai = app.get(&sku_path(shop, "CHAI-1"), &account.key).await;
    let chat = listing(chai.data(), "chat");
    assert_eq!(chat["state"], "blocked");
    assert!(chat["problem"].as_str().is_some_and(|p| p.contains("Commerce Policies")), "{chat}");
    // the storefront shows what the chat platform refuses
    assert_eq!(listing(chai.data(), "storefront")["state"], "synced");
    assert_eq!(chai.data()["sync_status"], "blocked");
    let blocked = events(&app, account.tenant, "product.blocked").await;
    assert_eq!(blocked.len(), 1);
    assert_eq!(blocked[0]["platform"], "chat");
    assert_eq!(blocked[0]["product"]["sku"], "CHAI-1");
    assert_eq!(blocked[0]["problem"], chat["problem"]);

    // refused again after a change: still blocked, not announced twice
    put_product(&app, &account.key, shop, "CHAI-1", json!({ "price": 700_000 })).await;
    app.run_jobs().await;
    let chai = app.get(&sku_path(shop, "CHAI-1"), &account.key).await;
    assert_eq!(listing(chai.data(), "chat")["state"], "blocked");
    assert_eq!(events(&app, account.tenant, "product.blocked").await.len(), 1);

    // renamed to something the platform takes: synced, the problem gone
    put_product(&app, &account.key, shop, "CHAI-1", json!({ "name": "Chai ya Tangawizi" })).await;
    app.run_jobs().await;
    let chai = app.get(&sku_path(shop, "CHAI-1"), &account.key).await;
    assert_eq!(listing(chai.data(), "chat")["state"], "synced");
    assert_eq!(listing(chai.data(), "chat")["problem"], Value::Null);
}

#[actix_web::test]
async fn a_sync_report_counts_what_each_platform_did_and_why_one_will_not_show_a_row() {
    let app = api_tests::spawn().await;
    let (account, shop, _) = connected_shop(&app, "api").await;
    let rows = json!({ "products": [
        { "sku": "A-1", "name": "Unga 2kg", "price": 420_000 },
        { "sku": "A-2", "name": "Sukari BLOCKED", "price": 380_000 },
        { "sku": "A-3", "name": "Mchele 5kg", "price": 1_250_000 },
        { "sku": "A-4", "price": 100 }
    ]});
    let res = app.post(&format!("{CATALOGUES}/{shop}/products/batch"), &account.key, rows).await;
    assert_status(&res, 202);
    let sync = id_of(res.data());
    app.run_jobs().await;
    let report = app.get(&format!("{CATALOGUES}/{shop}/syncs/{sync}"), &account.key).await;
    let report = report.data();
    let jobs = api_tests::sql_rows(&app.pool, "SELECT name, state, last_error FROM jobs").await;
    assert_eq!(report["status"], "completed", "{report} {jobs:?}");
    assert_eq!((report["created"].as_i64(), report["rejected"].as_i64()), (Some(3), Some(1)));
    assert_eq!(
        report["platforms"],
        json!({ "chat": { "synced": 2, "blocked": 1 }, "storefront": { "synced": 3, "blocked": 0 } })
    );
    let problems = report["problems"].as_array().expect("problems");
    assert!(problems.iter().any(|p| p["sku"] == "A-4" && p["stage"] == "ingest"), "{problems:?}");
    assert!(
        problems.iter().any(|p| p["sku"] == "A-2"
            && p["stage"] == "chat"
            && p["reason"].as_str().is_some_and(|r| r.contains("Commerce Policies"))),
        "{problems:?}"
    );
    // sync.completed carries the counts, after the platforms answered
    let completed = events(&app, account.tenant, "sync.completed").await;
    assert_eq!(completed.len(), 1);
    assert_eq!(completed[0]["sync"]["platforms"]["chat"]["blocked"], 1);
}

#[actix_web::test]
async fn drift_pushes_the_shop_s_copy_back_when_the_api_is_the_truth() {
    let app = api_tests::spawn().await;
    let (account, shop, connected) = connected_shop(&app, "api").await;
    let catalogue = connected["meta_catalogue_id"].as_str().expect("catalogue").to_owned();
    put_product(
        &app,
        &account.key,
        shop,
        "KAHAWA-1",
        json!({ "name": "Kahawa 500g", "price": 1_800_000, "inventory": 12, "image_url": "https://duka.example/k.jpg" }),
    )
    .await;
    app.run_jobs().await;
    // the merchant edits the platform's copy in the platform's own tool
    let edits =
        [("price_minor", "1750000"), ("inventory", "0"), ("image_url", "")].map(|(f, v)| (f.to_owned(), v.to_owned()));
    app.messaging.sandbox_catalogue_edit(account.tenant, &catalogue, "KAHAWA-1", &edits).await.expect("edit");

    let report = app.commerce.check_drift(account.tenant, commerce::CatalogueId(shop)).await.expect("drift check");
    assert_eq!((report.checked, report.drifted, report.pushed, report.pulled), (1, 1, 1, 0));
    let drifted = events(&app, account.tenant, "product.drifted").await;
    assert_eq!(drifted.len(), 1);
    // stock and image_url are never compared
    assert_eq!(drifted[0]["fields"], json!([{ "field": "price", "local": 1_800_000, "platform": 1_750_000 }]));
    assert_eq!(
        (drifted[0]["source_of_truth"].as_str(), drifted[0]["resolution"].as_str()),
        (Some("api"), Some("pushed"))
    );
    let copy = catalogue_copy(&app, account.tenant, &catalogue, "KAHAWA-1").await.expect("copy");
    assert_eq!(copy.price_minor, 1_800_000, "the shop's price sent back");
    let kahawa = app.get(&sku_path(shop, "KAHAWA-1"), &account.key).await;
    assert_eq!(kahawa.data()["price"], 1_800_000);
    assert_eq!(listing(kahawa.data(), "chat")["state"], "synced");

    // nothing differs now: a second check finds nothing
    let again = app.commerce.check_drift(account.tenant, commerce::CatalogueId(shop)).await.expect("again");
    assert_eq!((again.checked, again.drifted), (1, 0));
}

#[actix_web::test]
async fn drift_pulls_the_platform_s_values_when_the_platform_is_the_truth() {
    let app = api_tests::spawn().await;
    let (account, shop, connected) = connected_shop(&app, "platform").await;
    let catalogue = connected["meta_catalogue_id"].as_str().expect("catalogue").to_owned();
    put_product(&app, &account.key, shop, "CHAI-1", json!({ "name": "Chai 250g", "price": 650_000 })).await;
    app.run_jobs().await;
    let edits = [("name", "Chai ya Tangawizi 250g"), ("description", "Kutoka Usambara")]
        .map(|(f, v)| (f.to_owned(), v.to_owned()));
    app.messaging.sandbox_catalogue_edit(account.tenant, &catalogue, "CHAI-1", &edits).await.expect("edit");

    // the hourly check, queued when the shop was connected
    app.advance(time::Duration::hours(1)).await;
    let drifted = events(&app, account.tenant, "product.drifted").await;
    assert_eq!(drifted.len(), 1, "the hourly check ran");
    assert_eq!(drifted[0]["resolution"], "pulled");
    let chai = app.get(&sku_path(shop, "CHAI-1"), &account.key).await;
    assert_eq!(chai.data()["name"], "Chai ya Tangawizi 250g");
    assert_eq!(chai.data()["description"], "Kutoka Usambara");
    assert_eq!(listing(chai.data(), "chat")["state"], "synced");

    // and the next hour's check is queued by this one
    app.messaging
        .sandbox_catalogue_edit(account.tenant, &catalogue, "CHAI-1", &[("price_minor".into(), "600000".into())])
        .await
        .expect("edit");
    app.advance(time::Duration::hours(1)).await;
    let chai = app.get(&sku_path(shop, "CHAI-1"), &account.key).await;
    assert_eq!(chai.data()["price"], 600_000);
}

#[actix_web::test]
async fn connecting_is_refused_with_reasons_and_disconnecting_takes_the_chat_listings_away() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let shop = super::support::shop(&app, &account.key, "svc").await;
    let patch = |body: Value| {
        let (app, key, path) = (&app, account.key.clone(), shop_path(shop));
        async move { app.patch(&path, &key, body).await }
    };
    // no chat account at all
    let res = patch(json!({ "waba_id": WABA })).await;
    assert_status(&res, 422);
    assert!(res.body.to_string().contains("No chat account"), "{}", res.body);
    // chat without a connection; an unknown platform; nulls
    let res = patch(json!({ "channels": ["chat"] })).await;
    assert_status(&res, 422);
    assert!(res.body["errors"]["channels"].is_array(), "{}", res.body);
    let res = patch(json!({ "channels": ["web"], "is_connected_to_waba": null })).await;
    assert_status(&res, 422);
    assert!(res.body["errors"]["channels"].is_array() && res.body["errors"]["is_connected_to_waba"].is_array());

    add_account(&app, account.tenant, WABA, PHONE_ID, BUSINESS).await;
    add_account(&app, account.tenant, "200000000000002", "106540352242999", "+255222000999").await;
    // two accounts: the one to connect must be named
    let res = patch(json!({ "is_connected_to_waba": true })).await;
    assert_status(&res, 422);
    assert!(res.body["errors"]["waba_id"].is_array(), "{}", res.body);
    let res = patch(json!({ "waba_id": "999" })).await;
    assert_status(&res, 422);
    assert!(res.body["errors"]["waba_id"].is_array(), "{}", res.body);
    // a catalogue the platform does not know
    let res = patch(json!({ "waba_id": WABA, "meta_catalogue_id": "missing-42" })).await;
    assert_status(&res, 422);
    assert!(res.body["errors"]["meta_catalogue_id"].is_array(), "{}", res.body);

    // adopting a catalogue the platform has; connecting adds `chat` when channels are left out
    let res = patch(json!({ "waba_id": WABA, "meta_catalogue_id": "1234567890" })).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["meta_catalogue_id"], "1234567890");
    assert_eq!(res.data()["channels"], json!(["chat"]));
    put_product(&app, &account.key, shop, "UNGA-1", json!({ "name": "Unga", "price": 420_000 })).await;
    app.run_jobs().await;
    assert!(catalogue_copy(&app, account.tenant, "1234567890", "UNGA-1").await.is_some());

    let res = patch(json!({ "waba_id": null })).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["is_connected_to_waba"], false);
    assert_eq!(res.data()["meta_catalogue_id"], Value::Null);
    assert_eq!(res.data()["channels"], json!([]));
    let unga = app.get(&sku_path(shop, "UNGA-1"), &account.key).await;
    assert_eq!(unga.data()["listings"], json!([]));
    assert_eq!(unga.data()["sync_status"], Value::Null);

    // another tenant cannot publish to this tenant's business account
    let other = app.account(MANAGER).await;
    let theirs = super::support::shop(&app, &other.key, "svc").await;
    let res = app.patch(&shop_path(theirs), &other.key, json!({ "waba_id": WABA })).await;
    assert_status(&res, 422);
    let res = app.patch(&shop_path(shop), &other.key, json!({ "waba_id": WABA })).await;
    assert_status(&res, 404);
}

#[actix_web::test]
async fn the_storefront_page_lists_the_shop_s_products_with_prices_and_availability() {
    let app = api_tests::spawn().await;
    let account = app.account(MANAGER).await;
    let shop = super::support::shop(&app, &account.key, "svc").await;
    let res = app.patch(&shop_path(shop), &account.key, json!({ "channels": ["storefront"] })).await;
    assert_status(&res, 200);
    let url = res.data()["storefront_url"].as_str().expect("a storefront url").to_owned();
    let path = url.trim_start_matches("http://127.0.0.1:8080").to_owned();
    put_product(
        &app,
        &account.key,
        shop,
        "K-1",
        json!({ "name": "Kahawa <500g>", "price": 4_500_000, "inventory": 3 }),
    )
    .await;
    put_product(
        &app,
        &account.key,
        shop,
        "C-1",
        json!({ "name": "Chai", "price": 650_000, "sale_price": 600_000, "inventory": 0 }),
    )
    .await;
    put_product(&app, &account.key, shop, "GONE", json!({ "name": "Old stock", "price": 1 })).await;
    assert_status(&app.delete(&sku_path(shop, "GONE"), &account.key).await, 200);

    let page = app.request("GET", &path, None, None).await;
    assert_eq!(page.status, 200);
    assert!(page.header("content-type").is_some_and(|c| c.starts_with("text/html")));
    assert!(page.header("content-security-policy").is_some_and(|c| c.contains("frame-ancestors 'none'")));
    let html = page.body.as_str().expect("html");
    assert!(html.contains("<h1>Duka Letu</h1>"), "{html}");
    assert!(html.contains("Kahawa &lt;500g&gt;") && html.contains("TZS 45,000.00"), "{html}");
    assert!(html.contains("TZS 6,000.00") && html.contains("class=\"was\">TZS 6,500.00"), "{html}");
    assert!(html.contains("Out of stock"), "{html}");
    assert!(!html.contains("Old stock"), "a deleted product is not shown: {html}");

    // off the storefront, the link is no shop; an unknown token neither
    let res = app.patch(&shop_path(shop), &account.key, json!({ "channels": [] })).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["storefront_url"], Value::Null);
    assert_eq!(app.request("GET", &path, None, None).await.status, 404);
    assert_eq!(app.request("GET", "/shop/not-a-shop", None, None).await.status, 404);
}

#[actix_web::test]
async fn the_operator_edits_the_platform_s_copy_and_checks_drift_from_the_cli() {
    use gateway::cli::admin::{AdminCommand, CommerceCommand, SandboxCommand};
    let app = api_tests::spawn().await;
    let (account, shop, _) = connected_shop(&app, "api").await;
    put_product(&app, &account.key, shop, "UNGA-1", json!({ "name": "Unga 2kg", "price": 420_000 })).await;
    app.run_jobs().await;
    let url = app.db.url().to_owned();
    let edit = SandboxCommand::CatalogueEdit {
        tenant: account.tenant.0,
        catalogue: shop,
        sku: "UNGA-1".into(),
        set: vec![("price_minor".into(), "400000".into()), ("brand".into(), "Azam".into())],
    };
    let copy = crate::admin_cli::admin_json(&url, AdminCommand::Sandbox(edit)).await;
    assert_eq!((copy["price_minor"].as_i64(), copy["brand"].as_str()), (Some(400_000), Some("Azam")), "{copy}");
    // an unknown member is refused, naming it
    let bad = SandboxCommand::CatalogueEdit {
        tenant: account.tenant.0,
        catalogue: shop,
        sku: "UNGA-1".into(),
        set: vec![("colour".into(), "red".into())],
    };
    let refused = crate::admin_cli::admin(&url, AdminCommand::Sandbox(bad)).await.expect_err("an unknown member");
    assert!(refused.errors.contains_key("colour"), "{refused:?}");

    let check = CommerceCommand::CheckDrift { tenant: account.tenant.0, catalogue: None };
    let reports = crate::admin_cli::admin_json(&url, AdminCommand::Commerce(check)).await;
    assert_eq!(reports[0]["catalogue_id"], shop, "{reports}");
    assert_eq!((reports[0]["drifted"].as_i64(), reports[0]["pushed"].as_i64()), (Some(1), Some(1)), "{reports}");
    let drifted = events(&app, account.tenant, "product.drifted").await;
    let fields: Vec<&str> =
        drifted[0]["fields"].as_array().expect("fields").iter().filter_map(|f| f["field"].as_str()).collect();
    assert_eq!(fields, ["price", "brand"]);
}

/// The Cloud API's commerce, faked: a catalogue made as `cat-9`, every item accepted but those
/// named in `refused` (the provider's `validation_status`), and, while `down`, 500 for a batch.
struct Commerce {
    refused: &'static [&'static str],
    down: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl wiremock::Respond for Commerce {
    fn respond(&self, request: &wiremock::Request) -> wiremock::ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        if request.url.path().ends_with("/product_catalogs") {
            return wiremock::ResponseTemplate::new(200).set_body_json(json!({ "id": "cat-9" }));
        }
        if self.down.load(std::sync::atomic::Ordering::SeqCst) {
            return wiremock::ResponseTemplate::new(500)
                .set_body_json(json!({ "error": { "message": "down", "code": 2 } }));
        }
        let status: Vec<Value> = body["requests"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["data"]["id"].as_str())
            .filter(|id| self.refused.contains(id))
            .map(|id| json!({ "retailer_id": id, "errors": [{ "message": "Prohibited content." }] }))
            .collect();
        wiremock::ResponseTemplate::new(200).set_body_json(json!({ "handles": ["h1"], "validation_status": status }))
    }
}

#[actix_web::test]
async fn a_shop_on_a_cloud_account_publishes_through_the_cloud_api_and_records_its_answers() {
    use crate::chat::cloud::{ACCESS_TOKEN, VERSION, cloud_account};
    let app = api_tests::spawn().await;
    let graph = wiremock::MockServer::start().await;
    let down = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .and(wiremock::matchers::header("authorization", format!("Bearer {ACCESS_TOKEN}").as_str()))
        .respond_with(Commerce { refused: &["CHAI-1"], down: down.clone() })
        .mount(&graph)
        .await;
    let seller = cloud_account(&app, MANAGER, &graph.uri()).await;
    let key = seller.key().to_owned();
    let shop = super::support::shop(&app, &key, "svc").await;
    let res = app.patch(&shop_path(shop), &key, json!({ "waba_id": WABA })).await;
    assert_status(&res, 200);
    assert_eq!(
        (res.data()["meta_catalogue_id"].as_str(), res.data()["channels"].clone()),
        (Some("cat-9"), json!(["chat"]))
    );

    put_product(&app, &key, shop, "KAHAWA-1", json!({ "name": "Kahawa", "price": 450_000, "inventory": 4 })).await;
    put_product(&app, &key, shop, "CHAI-1", json!({ "name": "Chai", "price": 65_000 })).await;
    app.run_jobs().await;
    let kahawa = app.get(&sku_path(shop, "KAHAWA-1"), &key).await;
    assert_eq!(listing(kahawa.data(), "chat")["state"], "synced", "{}", kahawa.body);
    let chai = app.get(&sku_path(shop, "CHAI-1"), &key).await;
    assert_eq!(listing(chai.data(), "chat")["state"], "blocked");
    assert_eq!(listing(chai.data(), "chat")["problem"], "Prohibited content.");
    assert_eq!(events(&app, seller.tenant(), "product.blocked").await.len(), 1);
    // what the Cloud API was sent: the catalogue's items in its shape
    let batches: Vec<Value> = graph
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .filter(|r| r.url.path() == format!("/{VERSION}/cat-9/items_batch"))
        .map(|r| serde_json::from_slice(&r.body).expect("json"))
        .collect();
    let kahawa_item = batches
        .iter()
        .flat_map(|b| b["requests"].as_array().cloned().unwrap_or_default())
        .find(|r| r["data"]["id"] == "KAHAWA-1")
        .expect("KAHAWA-1 sent");
    assert_eq!(kahawa_item["method"], "UPDATE");
    assert_eq!(kahawa_item["data"]["price"], "4500.00 TZS");
    assert_eq!(kahawa_item["data"]["inventory"], 4);

    // the platform down: the listing is failed with why, and sent again once it is back
    down.store(true, std::sync::atomic::Ordering::SeqCst);
    put_product(&app, &key, shop, "KAHAWA-1", json!({ "price": 480_000 })).await;
    app.run_jobs().await;
    let kahawa = app.get(&sku_path(shop, "KAHAWA-1"), &key).await;
    assert_eq!(listing(kahawa.data(), "chat")["state"], "failed", "{}", kahawa.body);
    assert!(listing(kahawa.data(), "chat")["problem"].as_str().is_some_and(|p| p.contains("could not be reached")));
    down.store(false, std::sync::atomic::Ordering::SeqCst);
    app.advance(time::Duration::minutes(5)).await;
    let kahawa = app.get(&sku_path(shop, "KAHAWA-1"), &key).await;
    assert_eq!(listing(kahawa.data(), "chat")["state"], "synced", "{}", kahawa.body);
}

#[actix_web::test]
async fn a_run_is_completed_by_whichever_publish_answers_its_last_listing() {
    use crate::chat::cloud::{ACCESS_TOKEN, cloud_account};
    let app = api_tests::spawn().await;
    let graph = wiremock::MockServer::start().await;
    let down = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .and(wiremock::matchers::header("authorization", format!("Bearer {ACCESS_TOKEN}").as_str()))
        .respond_with(Commerce { refused: &[], down: down.clone() })
        .mount(&graph)
        .await;
    let seller = cloud_account(&app, MANAGER, &graph.uri()).await;
    let key = seller.key().to_owned();
    let shop = super::support::shop(&app, &key, "svc").await;
    assert_status(&app.patch(&shop_path(shop), &key, json!({ "waba_id": WABA })).await, 200);
    app.run_jobs().await;

    // the platform down: the run's own publish fails, and the run waits for its retry
    down.store(true, std::sync::atomic::Ordering::SeqCst);
    let rows = json!({ "products": [{ "sku": "A-1", "name": "Unga", "price": 420_000 }, { "sku": "A-2", "name": "Sukari", "price": 380_000 }] });
    let res = app.post(&format!("{CATALOGUES}/{shop}/products/batch"), &key, rows).await;
    assert_status(&res, 202);
    let sync = id_of(res.data());
    app.run_jobs().await;
    let report = app.get(&format!("{CATALOGUES}/{shop}/syncs/{sync}"), &key).await;
    assert_eq!(report.data()["status"], "running", "{}", report.body);

    // back up: another publish (a product edited meanwhile) sends the run's listings too, and
    // completes the run then, not at the run's next attempt
    down.store(false, std::sync::atomic::Ordering::SeqCst);
    put_product(&app, &key, shop, "CHAI-1", json!({ "name": "Chai", "price": 65_000 })).await;
    app.run_jobs().await;
    let report = app.get(&format!("{CATALOGUES}/{shop}/syncs/{sync}"), &key).await;
    assert_eq!(report.data()["status"], "completed", "{}", report.body);
    assert_eq!(report.data()["platforms"], json!({ "chat": { "synced": 2, "blocked": 0 } }));
    assert_eq!(events(&app, seller.tenant(), "sync.completed").await.len(), 1);
}
