//! Product sends (contract: Catalogues, products, stock, orders: `send-product`,
//! `send-product-list`, `send-catalogue`; Limits, Chat; HTTP statuses): a shop's products sent
//! to a customer as the chat provider's interactive messages (the sandbox), or as a storefront
//! link; only what is published on the platform; 422 without a chat account, 502 when the
//! provider refuses.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{Account, Resp, TestApp};
use providers::ChatContent;
use serde_json::{Value, json};

use super::support::{CATALOGUES, MANAGER, assert_status, id_of, put_product, shop_path};
use crate::chat::{BUSINESS, PHONE_ID, WABA, add_account, e164};
use crate::framework::assert_error;

const SEND_PRODUCT: &str = "/api/v3/catalogues/send-product";
const SEND_LIST: &str = "/api/v3/catalogues/send-product-list";
const SEND_CATALOGUE: &str = "/api/v3/catalogues/send-catalogue";
/// Manages shops and sends.
const SENDER: &str = "communications.catalogue.view,communications.catalogue.manage,communications.send";

/// A tenant allowed `permissions`, with a sandbox chat account and money in the wallet.
async fn chat_tenant<S, B>(app: &TestApp<S>, permissions: &str) -> Account
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let account = app.account(permissions).await;
    add_account(app, account.tenant, WABA, PHONE_ID, BUSINESS).await;
    let mut conn = app.conn().await;
    ::accounts::wallet::credit(&mut conn, account.tenant, 1_000_000, None).await.expect("credit");
    account
}

/// A shop of `key`'s tenant publishing to `channels` (`chat` connects it to the business
/// account `waba`): the shop as the API shows it.
async fn shop_on<S, B>(app: &TestApp<S>, key: &str, waba: &str, channels: Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.post(CATALOGUES, key, json!({ "name": "Duka Letu" })).await;
    assert_status(&res, 201);
    let shop = id_of(res.data());
    let connect = channels.as_array().is_some_and(|c| c.contains(&json!("chat")));
    let patch = match connect {
        true => json!({ "waba_id": waba, "channels": channels }),
        false => json!({ "channels": channels }),
    };
    let res = app.patch(&shop_path(shop), key, patch).await;
    assert_status(&res, 200);
    res.data().clone()
}

/// A tenant with a chat account and a shop on chat and the storefront holding `KAHAWA-1`,
/// `CHAI-1` and `UNGA-1` (published) and `SUKARI-1` (blocked by the platform):
/// `(account, shop id, provider catalogue id)`.
async fn stocked_shop<S, B>(app: &TestApp<S>) -> (Account, i64, String)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let account = chat_tenant(app, SENDER).await;
    let shop = shop_on(app, &account.key, WABA, json!(["chat", "storefront"])).await;
    let catalogue = shop["meta_catalogue_id"].as_str().expect("a provider catalogue").to_owned();
    let shop = id_of(&shop);
    for (sku, name) in
        [("KAHAWA-1", "Kahawa 500g"), ("CHAI-1", "Chai 250g"), ("UNGA-1", "Unga 2kg"), ("SUKARI-1", "Sukari BLOCKED")]
    {
        put_product(app, &account.key, shop, sku, json!({ "name": name, "price": 650_000 })).await;
    }
    app.run_jobs().await;
    (account, shop, catalogue)
}

/// The stored message a send answered with, read back by its uid.
async fn message_of<S, B>(app: &TestApp<S>, key: &str, sent: &Resp) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let uid = sent.data()["uid"].as_str().unwrap_or_else(|| panic!("a uid in {}", sent.body));
    let res = app.get(&format!("/api/v3/chat/{uid}"), key).await;
    assert_status(&res, 200);
    res.data().clone()
}

/// What the sandbox provider was last asked to send to `to`.
fn last_sent<S>(app: &TestApp<S>, to: &str) -> ChatContent {
    let sent = app.messaging.gateways().chat_sandbox().sent_to(to);
    sent.last().unwrap_or_else(|| panic!("nothing sent to {to}")).content.clone()
}

#[track_caller]
fn assert_invalid(res: &Resp, field: &str) {
    assert_error(res, 422);
    assert!(res.body["errors"][field].as_array().is_some_and(|m| !m.is_empty()), "errors.{field}: {}", res.body);
}

fn long(n: usize) -> String {
    "x".repeat(n)
}

#[actix_web::test]
async fn a_product_published_on_chat_goes_as_the_provider_s_product_message() {
    let app = api_tests::spawn().await;
    let (account, shop, catalogue) = stocked_shop(&app).await;
    // any common form of the customer's number; `platform` defaults to chat
    let body = json!({ "to": "0712 340 000", "catalogue_id": shop, "product_retailer_id": "KAHAWA-1",
        "body": "Kahawa mpya imefika", "footer": "Duka Letu" });
    let res = app.post(SEND_PRODUCT, &account.key, body).await;
    assert_status(&res, 201);
    let sent = res.data();
    assert_eq!((sent["platform"].as_str(), sent["status"].as_str()), (Some("chat"), Some("sent")), "{sent}");
    assert!(sent.get("link").is_none(), "no link on chat: {sent}");
    let interactive = json!({ "type": "product", "body": { "text": "Kahawa mpya imefika" },
        "footer": { "text": "Duka Letu" },
        "action": { "catalog_id": catalogue, "product_retailer_id": "KAHAWA-1" } });
    // data.message_id is the message's gateway id (the provider's), and the record says what went
    let stored = message_of(&app, &account.key, &res).await;
    assert!(sent["message_id"].as_str().is_some_and(|id| !id.is_empty()), "{sent}");
    assert_eq!(stored["gateway_message_id"], sent["message_id"]);
    assert_eq!(stored["recipient"], e164("0000"));
    assert_eq!(stored["sender"], PHONE_ID);
    assert_eq!(stored["metadata"]["interactive"], interactive);
    assert_eq!(stored["body"], "Kahawa mpya imefika");
    assert_eq!(last_sent(&app, &e164("0000")), ChatContent::Interactive { interactive });

    // body and footer are optional: the product message carries the product alone
    let body = json!({ "to": e164("0000"), "platform": "chat", "catalogue_id": shop, "product_retailer_id": "CHAI-1" });
    let res = app.post(SEND_PRODUCT, &account.key, body).await;
    assert_status(&res, 201);
    let stored = message_of(&app, &account.key, &res).await;
    assert_eq!(
        stored["metadata"]["interactive"],
        json!({ "type": "product", "action": { "catalog_id": catalogue, "product_retailer_id": "CHAI-1" } })
    );
}

#[actix_web::test]
async fn a_product_not_published_on_chat_is_422_naming_it() {
    let app = api_tests::spawn().await;
    let (account, shop, _) = stocked_shop(&app).await;
    let send = |sku: &str| json!({ "to": e164("0000"), "catalogue_id": shop, "product_retailer_id": sku });
    // blocked by the platform, with its words
    let res = app.post(SEND_PRODUCT, &account.key, send("SUKARI-1")).await;
    assert_invalid(&res, "product_retailer_id");
    assert!(res.body.to_string().contains("blocked") && res.body.to_string().contains("SUKARI-1"), "{}", res.body);
    // not on the shelf at all
    let res = app.post(SEND_PRODUCT, &account.key, send("MISSING-1")).await;
    assert_invalid(&res, "product_retailer_id");
    assert!(res.body["message"].as_str().is_some_and(|m| m.contains("MISSING-1")), "{}", res.body);
    // written but not yet published (the publish job has not run)
    put_product(&app, &account.key, shop, "MAZIWA-1", json!({ "name": "Maziwa 1l", "price": 180_000 })).await;
    let res = app.post(SEND_PRODUCT, &account.key, send("MAZIWA-1")).await;
    assert_invalid(&res, "product_retailer_id");
    assert!(res.body.to_string().contains("pending"), "{}", res.body);
    // deleted: off the shelf
    assert_status(&app.delete(&super::support::sku_path(shop, "UNGA-1"), &account.key).await, 200);
    let res = app.post(SEND_PRODUCT, &account.key, send("UNGA-1")).await;
    assert_invalid(&res, "product_retailer_id");

    // a shop that does not publish to chat
    let storefront_only = id_of(&shop_on(&app, &account.key, WABA, json!(["storefront"])).await);
    put_product(&app, &account.key, storefront_only, "KAHAWA-1", json!({ "name": "Kahawa", "price": 1 })).await;
    let body = json!({ "to": e164("0000"), "catalogue_id": storefront_only, "product_retailer_id": "KAHAWA-1" });
    assert_invalid(&app.post(SEND_PRODUCT, &account.key, body).await, "catalogue_id");
    // nothing was sent
    assert!(app.messaging.gateways().chat_sandbox().sent_to(&e164("0000")).is_empty());
}

#[actix_web::test]
async fn a_storefront_send_answers_the_product_s_link_and_sends_it_as_text() {
    let app = api_tests::spawn().await;
    let (account, shop, _) = stocked_shop(&app).await;
    let url = app.get(&shop_path(shop), &account.key).await.data()["storefront_url"]
        .as_str()
        .expect("a storefront")
        .to_owned();
    // the storefront shows what the chat platform blocked
    let body = json!({ "to": e164("0000"), "platform": "storefront", "catalogue_id": shop,
        "product_retailer_id": "SUKARI-1", "body": "Sukari imefika", "footer": "Karibu" });
    let res = app.post(SEND_PRODUCT, &account.key, body).await;
    assert_status(&res, 201);
    let sent = res.data();
    let link = format!("{url}#SUKARI-1");
    assert_eq!(sent["platform"], "storefront");
    assert_eq!(sent["link"], link);
    assert_eq!(sent["status"], "sent");
    let stored = message_of(&app, &account.key, &res).await;
    assert_eq!(stored["gateway_message_id"], sent["message_id"]);
    assert_eq!(stored["body"], format!("Sukari imefika\n{link}\nKaribu"));
    assert_eq!(last_sent(&app, &e164("0000")), ChatContent::Text { body: format!("Sukari imefika\n{link}\nKaribu") });
    // the page has the anchor the link points at
    let path = url.trim_start_matches("http://127.0.0.1:8080").to_owned();
    let page = app.request("GET", &path, None, None).await;
    assert!(page.body.as_str().is_some_and(|html| html.contains("id=\"SUKARI-1\"")), "{:?}", page.body);
    // without a body, the product's name leads
    let body =
        json!({ "to": e164("0000"), "platform": "storefront", "catalogue_id": shop, "product_retailer_id": "CHAI-1" });
    let res = app.post(SEND_PRODUCT, &account.key, body).await;
    assert_status(&res, 201);
    assert_eq!(message_of(&app, &account.key, &res).await["body"], format!("Chai 250g\n{url}#CHAI-1"));

    // not on the storefront: unknown, or deleted
    let body =
        json!({ "to": e164("0000"), "platform": "storefront", "catalogue_id": shop, "product_retailer_id": "NONE" });
    assert_invalid(&app.post(SEND_PRODUCT, &account.key, body).await, "product_retailer_id");
    // a shop without a storefront
    let chat_only = id_of(&shop_on(&app, &account.key, WABA, json!(["chat"])).await);
    put_product(&app, &account.key, chat_only, "KAHAWA-1", json!({ "name": "Kahawa", "price": 1 })).await;
    let body = json!({ "to": e164("0000"), "platform": "storefront", "catalogue_id": chat_only, "product_retailer_id": "KAHAWA-1" });
    assert_invalid(&app.post(SEND_PRODUCT, &account.key, body).await, "platform");
    // a platform that is neither
    let body =
        json!({ "to": e164("0000"), "platform": "ivr", "catalogue_id": shop, "product_retailer_id": "KAHAWA-1" });
    assert_invalid(&app.post(SEND_PRODUCT, &account.key, body).await, "platform");
}

#[actix_web::test]
async fn a_storefront_link_names_the_page_that_shows_the_product() {
    let app = api_tests::spawn().await;
    let account = chat_tenant(&app, SENDER).await;
    let shop = shop_on(&app, &account.key, WABA, json!(["storefront"])).await;
    let url = shop["storefront_url"].as_str().expect("a storefront").to_owned();
    let shop = id_of(&shop);
    // 61 products: the page shows 60 by name, so the last one is on page 2
    let products: Vec<Value> = (0..61)
        .map(|n| json!({ "sku": format!("P-{n:02}"), "name": format!("Bidhaa {n:02}"), "price": 100 }))
        .collect();
    let res =
        app.post(&format!("{CATALOGUES}/{shop}/products/batch"), &account.key, json!({ "products": products })).await;
    assert_status(&res, 202);
    app.run_jobs().await;
    let send = |sku: &str| json!({ "to": e164("0000"), "platform": "storefront", "catalogue_id": shop, "product_retailer_id": sku });
    let res = app.post(SEND_PRODUCT, &account.key, send("P-60")).await;
    assert_status(&res, 201);
    let link = format!("{url}?page=2#P-60");
    assert_eq!(res.data()["link"], link);
    let page = app
        .request(
            "GET",
            link.trim_start_matches("http://127.0.0.1:8080").split('#').next().unwrap_or_default(),
            None,
            None,
        )
        .await;
    assert!(page.body.as_str().is_some_and(|html| html.contains("id=\"P-60\"")), "{:?}", page.body);
    let res = app.post(SEND_PRODUCT, &account.key, send("P-59")).await;
    assert_eq!(res.data()["link"], format!("{url}#P-59"), "{}", res.body);
}

#[actix_web::test]
async fn a_product_list_goes_in_sections_of_published_products() {
    let app = api_tests::spawn().await;
    let (account, shop, catalogue) = stocked_shop(&app).await;
    let body = json!({ "to": e164("0000"), "catalogue_id": shop, "header_text": "Bidhaa mpya",
        "body": "Chagua unachopenda", "footer": "Duka Letu",
        "sections": [
            { "title": "Vinywaji", "product_items": ["KAHAWA-1", { "product_retailer_id": "CHAI-1" }] },
            { "title": "Vyakula", "product_items": [{ "product_retailer_id": "UNGA-1" }] }
        ] });
    let res = app.post(SEND_LIST, &account.key, body).await;
    assert_status(&res, 201);
    assert_eq!((res.data()["platform"].as_str(), res.data()["status"].as_str()), (Some("chat"), Some("sent")));
    let interactive = json!({ "type": "product_list",
        "header": { "type": "text", "text": "Bidhaa mpya" },
        "body": { "text": "Chagua unachopenda" },
        "footer": { "text": "Duka Letu" },
        "action": { "catalog_id": catalogue, "sections": [
            { "title": "Vinywaji", "product_items": [{ "product_retailer_id": "KAHAWA-1" }, { "product_retailer_id": "CHAI-1" }] },
            { "title": "Vyakula", "product_items": [{ "product_retailer_id": "UNGA-1" }] }
        ] } });
    let stored = message_of(&app, &account.key, &res).await;
    assert_eq!(stored["gateway_message_id"], res.data()["message_id"]);
    assert_eq!(stored["metadata"]["interactive"], interactive);
    assert_eq!(last_sent(&app, &e164("0000")), ChatContent::Interactive { interactive });

    // every product must be published on chat: each one that is not is named
    let body = json!({ "to": e164("0000"), "catalogue_id": shop, "header_text": "Bidhaa", "body": "Chagua",
        "sections": [
            { "title": "A", "product_items": ["KAHAWA-1", "SUKARI-1"] },
            { "title": "B", "product_items": ["CHAI-1", { "product_retailer_id": "MISSING-1" }] }
        ] });
    let res = app.post(SEND_LIST, &account.key, body).await;
    assert_invalid(&res, "sections[0].product_items[1]");
    assert_invalid(&res, "sections[1].product_items[1]");
    assert!(res.body["errors"].get("sections[0].product_items[0]").is_none(), "{}", res.body);
    assert_eq!(res.body["unpublished"], json!(["SUKARI-1", "MISSING-1"]));
    assert_eq!(app.messaging.gateways().chat_sandbox().sent_to(&e164("0000")).len(), 1, "nothing more was sent");
}

#[actix_web::test]
async fn the_catalogue_goes_as_a_catalogue_message_from_the_only_shop_on_chat() {
    let app = api_tests::spawn().await;
    let (account, shop, _) = stocked_shop(&app).await;
    // a storefront-only shop does not count
    shop_on(&app, &account.key, WABA, json!(["storefront"])).await;
    let body = json!({ "to": e164("0000"), "body": "Angalia duka letu", "footer": "Karibu",
        "thumbnail_product_retailer_id": "KAHAWA-1" });
    let res = app.post(SEND_CATALOGUE, &account.key, body).await;
    assert_status(&res, 201);
    let interactive = json!({ "type": "catalog_message", "body": { "text": "Angalia duka letu" },
        "footer": { "text": "Karibu" },
        "action": { "name": "catalog_message", "parameters": { "thumbnail_product_retailer_id": "KAHAWA-1" } } });
    let stored = message_of(&app, &account.key, &res).await;
    assert_eq!(stored["gateway_message_id"], res.data()["message_id"]);
    assert_eq!(stored["metadata"]["interactive"], interactive);
    assert_eq!(last_sent(&app, &e164("0000")), ChatContent::Interactive { interactive });
    // without a thumbnail, the provider picks one
    let res = app.post(SEND_CATALOGUE, &account.key, json!({ "to": e164("0000"), "body": "Duka" })).await;
    assert_status(&res, 201);
    assert_eq!(
        message_of(&app, &account.key, &res).await["metadata"]["interactive"]["action"],
        json!({ "name": "catalog_message" })
    );
    // the thumbnail must be published on chat
    let body = json!({ "to": e164("0000"), "body": "Duka", "thumbnail_product_retailer_id": "SUKARI-1" });
    assert_invalid(&app.post(SEND_CATALOGUE, &account.key, body).await, "thumbnail_product_retailer_id");

    // a second shop on chat: the one to send must be named
    let second = id_of(&shop_on(&app, &account.key, WABA, json!(["chat"])).await);
    let res = app.post(SEND_CATALOGUE, &account.key, json!({ "to": e164("0000"), "body": "Duka" })).await;
    assert_invalid(&res, "catalogue_id");
    assert!(res.body.to_string().contains(&second.to_string()), "{}", res.body);
    for named in [shop, second] {
        let body = json!({ "to": e164("0000"), "body": "Duka", "catalogue_id": named });
        assert_status(&app.post(SEND_CATALOGUE, &account.key, body).await, 201);
    }

    // no shop on chat at all
    let other = chat_tenant(&app, SENDER).await;
    shop_on(&app, &other.key, WABA, json!(["storefront"])).await;
    let res = app.post(SEND_CATALOGUE, &other.key, json!({ "to": e164("0000"), "body": "Duka" })).await;
    assert_invalid(&res, "catalogue_id");
}

#[actix_web::test]
async fn the_contract_s_limits_are_422_naming_the_member() {
    let app = api_tests::spawn().await;
    let (account, shop, _) = stocked_shop(&app).await;
    let product = json!({ "to": e164("0000"), "catalogue_id": shop, "product_retailer_id": "KAHAWA-1" });
    let section = |title: &str, n: usize| json!({ "title": title, "product_items": vec!["KAHAWA-1"; n] });
    let list = json!({ "to": e164("0000"), "catalogue_id": shop, "header_text": "Bidhaa", "body": "Chagua",
        "sections": [section("A", 1)] });
    let catalogue = json!({ "to": e164("0000"), "catalogue_id": shop, "body": "Duka" });
    let with = |base: &Value, member: &str, value: Value| {
        let mut body = base.clone();
        body[member] = value;
        body
    };
    let cases = [
        (SEND_PRODUCT, with(&product, "body", json!(long(1025))), "body"),
        (SEND_PRODUCT, with(&product, "footer", json!(long(61))), "footer"),
        (SEND_PRODUCT, with(&product, "to", json!("not a number")), "to"),
        (SEND_PRODUCT, with(&product, "to", json!(" ")), "to"),
        (SEND_PRODUCT, with(&product, "product_retailer_id", json!(" ")), "product_retailer_id"),
        (SEND_PRODUCT, with(&product, "platform", json!("")), "platform"),
        (SEND_LIST, with(&list, "body", json!(long(1025))), "body"),
        (SEND_LIST, with(&list, "footer", json!(long(61))), "footer"),
        (SEND_LIST, with(&list, "header_text", json!(long(61))), "header_text"),
        (SEND_LIST, with(&list, "header_text", json!("")), "header_text"),
        (SEND_LIST, with(&list, "sections", json!([])), "sections"),
        (SEND_LIST, with(&list, "sections", json!(vec![section("A", 1); 11])), "sections"),
        (SEND_LIST, with(&list, "sections", json!([section(&long(25), 1)])), "sections[0].title"),
        (SEND_LIST, with(&list, "sections", json!([section("A", 0)])), "sections[0].product_items"),
        (SEND_LIST, with(&list, "sections", json!([section("A", 31)])), "sections[0].product_items"),
        // the Cloud API's 30 products count across sections
        (SEND_LIST, with(&list, "sections", json!([section("A", 16), section("B", 15)])), "sections"),
        (
            SEND_LIST,
            with(&list, "sections", json!([{ "title": "A", "product_items": [{}] }])),
            "sections[0].product_items[0]",
        ),
        (SEND_CATALOGUE, with(&catalogue, "body", json!(long(1025))), "body"),
        (SEND_CATALOGUE, with(&catalogue, "footer", json!(long(61))), "footer"),
        (SEND_CATALOGUE, with(&catalogue, "body", json!("")), "body"),
    ];
    for (path, body, field) in cases {
        let res = app.post(path, &account.key, body.clone()).await;
        assert_eq!(res.status, 422, "{path} {body}: {}", res.body);
        assert_invalid(&res, field);
    }
    assert!(app.messaging.gateways().chat_sandbox().sent_to(&e164("0000")).is_empty(), "nothing was sent");

    // the limits themselves are taken
    let cases = [
        (SEND_PRODUCT, with(&with(&product, "body", json!(long(1024))), "footer", json!(long(60)))),
        (
            SEND_LIST,
            with(
                &with(&with(&list, "header_text", json!(long(60))), "body", json!(long(1024))),
                "sections",
                json!([section(&long(24), 3)].into_iter().chain(vec![section("B", 3); 9]).collect::<Vec<_>>()),
            ),
        ),
        (SEND_CATALOGUE, with(&with(&catalogue, "body", json!(long(1024))), "footer", json!(long(60)))),
    ];
    for (path, body) in cases {
        let res = app.post(path, &account.key, body.clone()).await;
        assert_status(&res, 201);
    }
}

#[actix_web::test]
async fn without_a_chat_account_every_send_is_422() {
    let app = api_tests::spawn().await;
    let account = app.account(SENDER).await;
    let shop = shop_on(&app, &account.key, WABA, json!(["storefront"])).await;
    let shop = id_of(&shop);
    put_product(&app, &account.key, shop, "KAHAWA-1", json!({ "name": "Kahawa", "price": 1 })).await;
    let product = json!({ "to": e164("0000"), "catalogue_id": shop, "product_retailer_id": "KAHAWA-1" });
    let cases = [
        (SEND_PRODUCT, product.clone()),
        (
            SEND_PRODUCT,
            json!({ "to": e164("0000"), "platform": "storefront", "catalogue_id": shop, "product_retailer_id": "KAHAWA-1" }),
        ),
        (
            SEND_LIST,
            json!({ "to": e164("0000"), "catalogue_id": shop, "header_text": "B", "body": "C",
            "sections": [{ "title": "A", "product_items": ["KAHAWA-1"] }] }),
        ),
        (SEND_CATALOGUE, json!({ "to": e164("0000"), "body": "Duka" })),
    ];
    for (path, body) in cases {
        let res = app.post(path, &account.key, body).await;
        assert_error(&res, 422);
        assert!(res.body["message"].as_str().is_some_and(|m| m.contains("No chat account")), "{path}: {}", res.body);
    }
}

#[actix_web::test]
async fn a_provider_refusal_is_502_with_the_provider_s_reason() {
    let app = api_tests::spawn().await;
    let (account, shop, _) = stocked_shop(&app).await;
    let sends = |to: &str| {
        [
            (SEND_PRODUCT, json!({ "to": to, "catalogue_id": shop, "product_retailer_id": "KAHAWA-1" })),
            (
                SEND_PRODUCT,
                json!({ "to": to, "platform": "storefront", "catalogue_id": shop, "product_retailer_id": "KAHAWA-1" }),
            ),
            (
                SEND_LIST,
                json!({ "to": to, "catalogue_id": shop, "header_text": "B", "body": "C",
                "sections": [{ "title": "A", "product_items": ["KAHAWA-1"] }] }),
            ),
            (SEND_CATALOGUE, json!({ "to": to, "body": "Duka" })),
        ]
    };
    // refused outright, and refused as outside the customer's 24-hour window
    for (to, code) in [(e164("0001"), "131026"), (e164("0005"), "131047")] {
        for (path, body) in sends(&to) {
            let res = app.post(path, &account.key, body).await;
            assert_error(&res, 502);
            assert!(res.body["message"].as_str().is_some_and(|m| m.contains(code)), "{path} {to}: {}", res.body);
            assert!(res.body["provider_reason"].as_str().is_some_and(|r| r.contains(code)), "{}", res.body);
            // the failed message stays on record
            let uid = res.body["message_uid"].as_str().expect("the message's uid");
            let stored = app.get(&format!("/api/v3/chat/{uid}"), &account.key).await;
            assert_eq!(stored.data()["status"], "failed", "{}", stored.body);
        }
    }
}

#[actix_web::test]
async fn sending_needs_communications_send_and_catalogue_view() {
    let app = api_tests::spawn().await;
    let (owner, shop, _) = stocked_shop(&app).await;
    let product = json!({ "to": e164("0000"), "catalogue_id": shop, "product_retailer_id": "KAHAWA-1" });
    let list = json!({ "to": e164("0000"), "catalogue_id": shop, "header_text": "B", "body": "C",
        "sections": [{ "title": "A", "product_items": ["KAHAWA-1"] }] });
    let catalogue = json!({ "to": e164("0000"), "catalogue_id": shop, "body": "Duka" });
    for permissions in [MANAGER, "communications.send"] {
        let user = app.user(owner.tenant, permissions).await;
        let key = app.key(owner.tenant, user).await;
        for (path, body) in [(SEND_PRODUCT, &product), (SEND_LIST, &list), (SEND_CATALOGUE, &catalogue)] {
            assert_error(&app.post(path, &key, body.clone()).await, 403);
        }
    }
    // and a send-only user with catalogue view may
    let user = app.user(owner.tenant, "communications.send,communications.catalogue.view").await;
    let key = app.key(owner.tenant, user).await;
    assert_status(&app.post(SEND_PRODUCT, &key, product).await, 201);
}

#[actix_web::test]
async fn another_tenant_s_catalogue_is_404_and_numbers_are_the_caller_s() {
    let app = api_tests::spawn().await;
    let (_, shop, _) = stocked_shop(&app).await;
    let other = chat_tenant(&app, SENDER).await;
    let cases = [
        (SEND_PRODUCT, json!({ "to": e164("0000"), "catalogue_id": shop, "product_retailer_id": "KAHAWA-1" })),
        (
            SEND_LIST,
            json!({ "to": e164("0000"), "catalogue_id": shop, "header_text": "B", "body": "C",
            "sections": [{ "title": "A", "product_items": ["KAHAWA-1"] }] }),
        ),
        (SEND_CATALOGUE, json!({ "to": e164("0000"), "catalogue_id": shop, "body": "Duka" })),
    ];
    for (path, body) in cases {
        assert_error(&app.post(path, &other.key, body).await, 404);
    }
    assert!(app.messaging.gateways().chat_sandbox().sent_to(&e164("0000")).is_empty(), "nothing was sent");
}

#[actix_web::test]
async fn a_chat_send_goes_from_a_number_of_the_catalogue_s_business_account() {
    let app = api_tests::spawn().await;
    let (account, shop, _) = stocked_shop(&app).await;
    // a second business account, its number the workspace default
    let (waba, phone_id, number) = ("200000000000002", "106540352242999", "+255222000999");
    add_account(&app, account.tenant, waba, phone_id, number).await;
    api_tests::sql_exec(&app.pool, "UPDATE chat_accounts SET is_default = false").await;
    api_tests::sql_exec(&app.pool, &format!("UPDATE chat_accounts SET is_default = true WHERE waba_id = '{waba}'"))
        .await;
    let accounts = app.get("/api/v3/chat/accounts", &account.key).await;
    assert_eq!(accounts.data()["default_phone_number_id"], phone_id, "{}", accounts.body);
    let product = json!({ "to": e164("0000"), "catalogue_id": shop, "product_retailer_id": "KAHAWA-1" });
    // left out: the catalogue's account's number, not the default of another account
    let res = app.post(SEND_PRODUCT, &account.key, product.clone()).await;
    assert_status(&res, 201);
    assert_eq!(message_of(&app, &account.key, &res).await["sender"], PHONE_ID);
    // named, by id or by number
    let mut body = product.clone();
    body["from"] = json!(BUSINESS);
    let res = app.post(SEND_PRODUCT, &account.key, body).await;
    assert_status(&res, 201);
    assert_eq!(message_of(&app, &account.key, &res).await["sender"], PHONE_ID);
    // another account's number cannot send this catalogue's products; an unknown one is refused
    for from in [phone_id, "999"] {
        let mut body = product.clone();
        body["from"] = json!(from);
        assert_invalid(&app.post(SEND_PRODUCT, &account.key, body).await, "from");
    }
    // a storefront link is plain text: any number of the account may send it
    let body = json!({ "to": e164("0000"), "from": phone_id, "platform": "storefront", "catalogue_id": shop,
        "product_retailer_id": "KAHAWA-1" });
    let res = app.post(SEND_PRODUCT, &account.key, body).await;
    assert_status(&res, 201);
    assert_eq!(message_of(&app, &account.key, &res).await["sender"], phone_id);
    let body = json!({ "to": e164("0000"), "from": "999", "platform": "storefront", "catalogue_id": shop,
        "product_retailer_id": "KAHAWA-1" });
    assert_invalid(&app.post(SEND_PRODUCT, &account.key, body).await, "from");
}
