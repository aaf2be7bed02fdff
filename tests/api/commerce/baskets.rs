//! Shop links and baskets (contract: Basket (cart); States, Basket; Shop links and baskets;
//! Events `cart.submitted`, `cart.abandoned`): links made with lines, a category or a product,
//! sent in a customer's open 24-hour window or handed back as a link, read by code or id, timed
//! out (abandoned after a day when sent with items, expired after a week), and submitted from
//! the public basket page as an order, in process and in a real headless Chromium.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::test::TestRequest;
use api_tests::browser::Browser;
use api_tests::{Account, Resp, TestApp, json, spawn};
use fantoccini::Locator;
use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime};

use super::support::{MANAGER, ORDERS, assert_status, events, id_of, put_product, read_order, shop};
use crate::chat::{APP_SECRET, chat_id, deliver, e164, text_from};
use crate::framework::assert_error;

const LINKS: &str = "/api/v3/shop-links";
const CARTS: &str = "/api/v3/carts";
/// Manages shops, sends links and reads the chat.
const SELLER: &str = "communications.catalogue.view,communications.catalogue.manage,communications.send,\
                      communications.messages.view";
/// The public URL the app is configured with: the start of every basket's `url`.
const ORIGIN: &str = "http://127.0.0.1:8080";
/// The letters and digits a basket code is drawn from (no 0/O, no 1/I).
const CODE_ALPHABET: &str = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

/// A tenant allowed `permissions` with a sandbox chat account and money in the wallet: the
/// account and the chat webhook's path.
async fn seller<S, B>(app: &TestApp<S>, permissions: &str) -> (Account, String)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    // the chat tests' seller: a sandbox chat account and 10,000.00 in the wallet
    let crate::chat::ChatAccount { account, token } = crate::chat::chat_account(app, permissions).await;
    (account, format!("/hooks/chat/{token}"))
}

/// A shop (external stock) holding `K-1` Kahawa (5,000.00 on sale at 4,500.00), `C-1` Chai
/// (3,000.00) and `T-1` Tangawizi (2,000.00) in "Hot drinks", and `U-1` Unga (3,500.00) in
/// "Food": its id.
async fn stocked_shop<S, B>(app: &TestApp<S>, key: &str) -> i64
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let shop = shop(app, key, "external").await;
    for (sku, body) in [
        ("K-1", json!({"name": "Kahawa 500g", "price": 500_000, "sale_price": 450_000, "category": "Hot drinks"})),
        ("C-1", json!({"name": "Chai 250g", "price": 300_000, "category": "Hot drinks"})),
        ("T-1", json!({"name": "Tangawizi", "price": 200_000, "category": "Hot drinks"})),
        ("U-1", json!({"name": "Unga 2kg", "price": 350_000, "category": "Food"})),
    ] {
        put_product(app, key, shop, sku, body).await;
    }
    shop
}

/// The customer `chat_id(last4)` writes to the business (a signed inbound text), which opens
/// their 24-hour window: the conversation's id.
async fn customer_writes<S, B>(app: &TestApp<S>, hook: &str, key: &str, last4: &str) -> i64
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let body = text_from(&chat_id(last4), &format!("wamid.IN{last4}"), "Habari, nataka kahawa");
    let res = deliver(app, hook, Some(APP_SECRET), &body).await;
    assert_status(&res, 200);
    let listed = app.get("/api/v3/chat/conversations", key).await;
    assert_status(&listed, 200);
    let items = listed.data()["items"].as_array().cloned().unwrap_or_default();
    let found = items.iter().find(|c| c["customer"]["phone"] == e164(last4));
    let conversation = found.unwrap_or_else(|| panic!("a conversation with {}: {}", e164(last4), listed.body));
    assert_eq!(conversation["window"]["open"], true, "{conversation}");
    id_of(conversation)
}

/// `POST /shop-links` expecting 201: the answer's `data`.
async fn link<S, B>(app: &TestApp<S>, key: &str, body: Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.post(LINKS, key, body).await;
    assert_status(&res, 201);
    res.data().clone()
}

/// `GET /carts/{reference}` expecting 200: the basket.
async fn cart<S, B>(app: &TestApp<S>, key: &str, reference: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&format!("{CARTS}/{reference}"), key).await;
    assert_status(&res, 200);
    res.data().clone()
}

/// `GET /carts{query}` expecting 200: the page.
async fn carts<S, B>(app: &TestApp<S>, key: &str, query: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&format!("{CARTS}{query}"), key).await;
    assert_status(&res, 200);
    res.data().clone()
}

/// The ids of a page's baskets, in order.
fn ids(page: &Value) -> Vec<i64> {
    page["items"].as_array().unwrap_or_else(|| panic!("items in {page}")).iter().map(id_of).collect()
}

/// The basket page's path (`/basket/<token>`) from a basket.
fn page_path(cart: &Value) -> String {
    let url = cart["url"].as_str().unwrap_or_else(|| panic!("a url in {cart}"));
    url.strip_prefix(ORIGIN).unwrap_or_else(|| panic!("{url} starts with the public URL {ORIGIN}")).to_owned()
}

/// `GET` of a public page (no key).
async fn open_page<S, B>(app: &TestApp<S>, path: &str) -> Resp
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    app.send(TestRequest::get().uri(path)).await
}

/// The basket page's form posted as a browser posts it (no key).
async fn submit<S, B>(app: &TestApp<S>, path: &str, form: &[(&str, &str)]) -> Resp
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    app.send(TestRequest::post().uri(path).set_form(form.to_vec())).await
}

/// A page's HTML.
#[track_caller]
fn html(res: &Resp) -> &str {
    assert!(res.header("content-type").is_some_and(|c| c.starts_with("text/html")), "an HTML page: {:?}", res.headers);
    res.body.as_str().unwrap_or_else(|| panic!("an HTML body: {}", res.body))
}

/// `(sku, quantity)` of basket items or order lines.
fn lines(items: &Value) -> Vec<(String, i64)> {
    items
        .as_array()
        .unwrap_or_else(|| panic!("a list: {items}"))
        .iter()
        .map(|i| (i["sku"].as_str().unwrap_or_default().to_owned(), i["quantity"].as_i64().unwrap_or(-1)))
        .collect()
}

fn owned(pairs: &[(&str, i64)]) -> Vec<(String, i64)> {
    pairs.iter().map(|(s, q)| ((*s).to_owned(), *q)).collect()
}

fn time_of(value: &Value) -> OffsetDateTime {
    let text = value.as_str().unwrap_or_else(|| panic!("a time: {value}"));
    OffsetDateTime::parse(text, &Rfc3339).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[track_caller]
fn assert_invalid(res: &Resp, field: &str) {
    assert_error(res, 422);
    assert!(res.body["errors"][field].as_array().is_some_and(|m| !m.is_empty()), "errors.{field}: {}", res.body);
}

/// The names of the tenant's `cart.*` events, oldest first.
async fn cart_events<S>(app: &TestApp<S>, account: &Account) -> Vec<String> {
    let rows = api_tests::sql_rows(
        &app.pool,
        &format!(
            "SELECT name FROM events WHERE tenant_id = {} AND name LIKE 'cart.%' ORDER BY occurred_at, created_at",
            account.tenant.0
        ),
    )
    .await;
    rows.iter().map(|r| r["name"].as_str().unwrap_or_default().to_owned()).collect()
}

#[actix_web::test]
async fn a_link_without_a_recipient_is_a_priced_open_basket_found_by_code_or_id() {
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = stocked_shop(&app, &acme.key).await;
    let answer = link(
        &app,
        &acme.key,
        json!({
            "catalogue_id": shop,
            "note": "Karibu tena",
            "items": [
                {"sku": "K-1", "variant": "500g", "addons": ["milk", "sugar"], "quantity": 2, "note": "ground fine"},
                {"sku": "NOPE-9", "quantity": 1},
                // the alias, and the default quantity of 1
                {"retailer_id": "C-1"},
            ],
        }),
    )
    .await;
    assert_eq!(answer["sent"], false, "no recipient: nothing sent");
    assert_eq!(answer["send_error"], Value::Null);
    let problems = answer["problems"].as_array().cloned().unwrap_or_default();
    assert_eq!(problems.len(), 1, "{answer}");
    assert_eq!(problems[0]["sku"], "NOPE-9");
    assert!(problems[0]["reason"].as_str().is_some_and(|r| !r.is_empty()), "{answer}");

    let basket = answer["cart"].clone();
    assert_eq!(basket["status"], "open");
    assert_eq!(basket["catalogue_id"], shop);
    let code = basket["code"].as_str().unwrap_or_default().to_owned();
    assert_eq!(code.chars().count(), 5, "a five-character code: {basket}");
    assert!(code.chars().all(|c| CODE_ALPHABET.contains(c)), "{code} is drawn from {CODE_ALPHABET}");
    assert_eq!(answer["url"], basket["url"]);
    assert!(page_path(&basket).starts_with("/basket/"), "{basket}");
    assert_eq!(
        basket["items"],
        json!([
            {"sku": "K-1", "name": "Kahawa 500g", "variant": "500g", "options": ["milk", "sugar"], "note": "ground fine",
             "quantity": 2, "unit_price_minor": 450_000, "line_total_minor": 900_000, "currency": "TZS"},
            {"sku": "C-1", "name": "Chai 250g", "variant": null, "options": [], "note": null,
             "quantity": 1, "unit_price_minor": 300_000, "line_total_minor": 300_000, "currency": "TZS"},
        ]),
        "the sale price when there is one; the unknown line left out"
    );
    assert_eq!(basket["subtotal_minor"], 1_200_000);
    assert_eq!(basket["currency"], "TZS");
    assert_eq!(basket["note"], "Karibu tena");
    for absent in ["conversation_id", "customer", "message_id", "order_id", "submitted_at", "category"] {
        assert_eq!(basket[absent], Value::Null, "{absent} in {basket}");
    }
    assert_eq!(time_of(&basket["created_at"]), app.clock.now());
    assert_eq!(time_of(&basket["expires_at"]), app.clock.now() + Duration::days(7));

    // the same basket by its code, in any case, and by its id
    let id = id_of(&basket);
    assert_eq!(cart(&app, &acme.key, &code).await, basket);
    assert_eq!(cart(&app, &acme.key, &code.to_lowercase()).await, basket);
    assert_eq!(cart(&app, &acme.key, &id.to_string()).await, basket);
    let other = if code == "ZZZZZ" { "YYYYY" } else { "ZZZZZ" };
    assert_error(&app.get(&format!("{CARTS}/{other}"), &acme.key).await, 404);
    assert_error(&app.get(&format!("{CARTS}/{}", id + 1_000), &acme.key).await, 404);

    // two more (the shop may be left out when the account has one), newest first
    let second = link(&app, &acme.key, json!({"sku": "U-1"})).await;
    let third = link(&app, &acme.key, json!({"items": [{"sku": "T-1", "quantity": 3}]})).await;
    assert_eq!(second["cart"]["catalogue_id"], shop);
    assert_ne!(second["cart"]["code"], third["cart"]["code"]);
    let listed = carts(&app, &acme.key, "").await;
    assert_eq!(ids(&listed), [id_of(&third["cart"]), id_of(&second["cart"]), id]);
    assert_eq!(listed["pagination"]["total"], 3);
    assert_eq!(listed["items"][2], basket, "the list shows the basket's whole shape");
    assert_eq!(ids(&carts(&app, &acme.key, "?status=open").await).len(), 3);
    for status in ["sent", "ordered", "abandoned", "expired"] {
        let page = carts(&app, &acme.key, &format!("?status={status}")).await;
        assert_eq!(page["pagination"]["total"], 0, "{status}: {page}");
    }
    let page = carts(&app, &acme.key, "?limit=2&page=2").await;
    assert_eq!(ids(&page), [id]);
    assert_invalid(&app.get(&format!("{CARTS}?status=lost"), &acme.key).await, "status");

    // reading needs the catalogue view permission
    let outsider = app.user(acme.tenant, "communications.send").await;
    let outsider = app.key(acme.tenant, outsider).await;
    assert_error(&app.get(CARTS, &outsider).await, 403);
    assert_error(&app.get(&format!("{CARTS}/{code}"), &outsider).await, 403);
    assert_error(&app.post(LINKS, &outsider, json!({"sku": "K-1"})).await, 403);
}

#[actix_web::test]
async fn a_basket_whose_id_has_five_digits_is_found_by_that_id() {
    // contract: GET /carts/{ref} takes the five-character code or the id; an id of five digits
    // is an id too (a code is five of A-Z and 2-9 and rarely all digits)
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    stocked_shop(&app, &acme.key).await;
    api_tests::sql_exec(&app.pool, "SELECT setval('carts_id_seq', 12344)").await;
    let basket = link(&app, &acme.key, json!({"sku": "K-1"})).await["cart"].clone();
    assert_eq!(id_of(&basket), 12_345);
    assert_eq!(cart(&app, &acme.key, "12345").await, basket);
}

#[actix_web::test]
async fn category_and_product_links_offer_their_products_and_bad_links_are_refused() {
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = stocked_shop(&app, &acme.key).await;
    let categories = api_tests::sql_rows(&app.pool, "SELECT id, name FROM catalogue_categories").await;
    let hot = categories.iter().find(|c| c["name"] == "Hot drinks").unwrap_or_else(|| panic!("{categories:?}"));
    let hot = hot["id"].as_i64().expect("an id");

    // by name, by slug and by id: the page offers the category's products, the basket is empty
    for category in [json!("Hot drinks"), json!("hot-drinks"), json!(hot)] {
        let answer = link(&app, &acme.key, json!({"catalogue_id": shop, "category": category})).await;
        let basket = &answer["cart"];
        assert_eq!(basket["category"], "Hot drinks", "{category}: {basket}");
        assert_eq!((&basket["items"], &basket["subtotal_minor"]), (&json!([]), &json!(0)), "{basket}");
        let page = open_page(&app, &page_path(basket)).await;
        assert_status(&page, 200);
        let page = html(&page);
        for sku in ["K-1", "C-1", "T-1"] {
            assert!(page.contains(&format!("name=\"qty:{sku}\" value=\"0\"")), "{sku} offered: {page}");
        }
        assert!(!page.contains("qty:U-1"), "Food is not offered: {page}");
    }

    // a product: a basket of one
    let answer = link(&app, &acme.key, json!({"sku": "U-1"})).await;
    assert_eq!(lines(&answer["cart"]["items"]), owned(&[("U-1", 1)]));
    assert_eq!(answer["cart"]["subtotal_minor"], 350_000);
    assert_eq!(answer["problems"], json!([]));
    let page = open_page(&app, &page_path(&answer["cart"])).await;
    assert!(html(&page).contains("name=\"qty:U-1\" value=\"1\""), "{}", page.body);
    let made = 4;

    // what the link names must be this shop's, and the lines within their limits
    let item = |quantity: Value| json!({"sku": "K-1", "quantity": quantity});
    let refused = [
        (json!({"category": "Cold drinks"}), "category"),
        (json!({"category": hot + 1_000}), "category"),
        (json!({"sku": "NOPE-9"}), "sku"),
        (json!({}), "items"),
        (json!({"note": "only a note"}), "items"),
        (json!({"items": vec![item(json!(1)); 51]}), "items"),
        (json!({"items": [item(json!(0))]}), "items.0.quantity"),
        (json!({"items": [item(json!(1)), item(json!(1_001))]}), "items.1.quantity"),
        (json!({"items": [item(json!(-2))]}), "items.0.quantity"),
        (json!({"sku": "K-1", "note": "n".repeat(1_001)}), "note"),
        (json!({"items": [{"quantity": 2}]}), "items.0.sku"),
        (json!({"items": [{"sku": "K-1", "variant": "v".repeat(101)}]}), "items.0.variant"),
        (json!({"items": [{"sku": "K-1", "note": "n".repeat(501)}]}), "items.0.note"),
        (json!({"items": [{"sku": "K-1", "addons": vec!["milk"; 11]}]}), "items.0.addons"),
        (json!({"items": [{"sku": "K-1", "addons": ["a".repeat(101)]}]}), "items.0.addons"),
        (json!({"sku": "K-1", "message": "m".repeat(1_025)}), "message"),
    ];
    for (body, field) in refused {
        let res = app.post(LINKS, &acme.key, body.clone()).await;
        assert_eq!(res.status, 422, "{body}: {}", res.body);
        assert_invalid(&res, field);
    }
    // the limits themselves are allowed
    let longest =
        link(&app, &acme.key, json!({"note": "n".repeat(1_000), "items": vec![item(json!(1_000)); 50]})).await;
    assert_eq!(longest["cart"]["items"].as_array().map(Vec::len), Some(50));
    assert_eq!(longest["cart"]["subtotal_minor"], 50 * 1_000 * 450_000_i64);
    let fullest =
        json!({"sku": "K-1", "variant": "v".repeat(100), "note": "n".repeat(500), "addons": vec!["a".repeat(100); 10]});
    let answer = link(&app, &acme.key, json!({"items": [fullest], "message": "m".repeat(1_024)})).await;
    assert_eq!(answer["cart"]["items"][0]["options"].as_array().map(Vec::len), Some(10));
    assert_eq!(carts(&app, &acme.key, "").await["pagination"]["total"], made + 2, "no refused link made a basket");

    // with two shops the link names one
    let res = app.post(super::support::CATALOGUES, &acme.key, json!({"name": "Duka la Pili"})).await;
    assert_status(&res, 201);
    assert_invalid(&app.post(LINKS, &acme.key, json!({"sku": "K-1"})).await, "catalogue_id");
    let named = link(&app, &acme.key, json!({"catalogue_id": shop, "sku": "K-1"})).await;
    assert_eq!(named["cart"]["catalogue_id"], shop);
}

#[actix_web::test]
async fn a_link_is_sent_in_an_open_window_with_the_send_permission() {
    let app = spawn().await;
    let (acme, hook) = seller(&app, SELLER).await;
    stocked_shop(&app, &acme.key).await;
    let conversation = customer_writes(&app, &hook, &acme.key, "0000").await;

    // catalogue view without communications.send: a link may be made, not sent
    let viewer = app.user(acme.tenant, "communications.catalogue.view,communications.messages.view").await;
    let viewer = app.key(acme.tenant, viewer).await;
    for recipient in [json!({"to": e164("0000")}), json!({"conversation_id": conversation})] {
        let mut body = json!({"sku": "K-1"});
        body.as_object_mut().expect("object").extend(recipient.as_object().cloned().unwrap_or_default());
        assert_error(&app.post(LINKS, &viewer, body).await, 403);
    }
    assert_eq!(carts(&app, &acme.key, "").await["pagination"]["total"], 0, "nothing made by the refusals");
    let unsent = link(&app, &viewer, json!({"sku": "K-1"})).await;
    assert_eq!(unsent["sent"], false);

    // to the customer's number: sent in their conversation
    let answer = link(&app, &acme.key, json!({"items": [{"sku": "K-1", "quantity": 2}], "to": e164("0000")})).await;
    assert_eq!(answer["sent"], true, "{answer}");
    assert_eq!(answer["send_error"], Value::Null);
    let basket = answer["cart"].clone();
    assert_eq!(basket["status"], "sent");
    assert_eq!(basket["conversation_id"], conversation);
    assert_eq!(basket["customer"], e164("0000"));
    let uid = basket["message_id"].as_str().unwrap_or_else(|| panic!("a message id: {basket}")).to_owned();
    assert!(uid.starts_with("msg_"), "{uid}");
    let message = app.get(&format!("/api/v3/chat/{uid}"), &acme.key).await;
    assert_status(&message, 200);
    let url = basket["url"].as_str().unwrap_or_default();
    assert!(message.data()["body"].as_str().is_some_and(|b| b.contains(url)), "the link in {}", message.body);
    assert_eq!(message.data()["conversation_id"], conversation);
    assert_eq!(cart(&app, &acme.key, basket["code"].as_str().unwrap_or_default()).await, basket);

    // in the conversation named, with the business's words before the link
    let answer =
        link(&app, &acme.key, json!({"sku": "C-1", "conversation_id": conversation, "message": "Kikapu chako"})).await;
    assert_eq!(answer["sent"], true, "{answer}");
    assert_eq!(answer["cart"]["status"], "sent");
    assert_eq!(answer["cart"]["conversation_id"], conversation);
    let uid = answer["cart"]["message_id"].as_str().unwrap_or_default().to_owned();
    let message = app.get(&format!("/api/v3/chat/{uid}"), &acme.key).await;
    assert_eq!(message.data()["body"], format!("Kikapu chako\n{}", answer["url"].as_str().unwrap_or_default()));

    let listed = carts(&app, &acme.key, &format!("?conversation_id={conversation}")).await;
    assert_eq!(ids(&listed), [id_of(&answer["cart"]), id_of(&basket)]);
    assert_eq!(carts(&app, &acme.key, "?status=sent").await["pagination"]["total"], 2);
    assert_eq!(carts(&app, &acme.key, &format!("?conversation_id={}", conversation + 1_000)).await["items"], json!([]));

    // a customer who never wrote has no window; an unknown conversation is not found
    let res = app.post(LINKS, &acme.key, json!({"sku": "K-1", "to": e164("0007")})).await;
    assert_error(&res, 409);
    assert_eq!(res.body["reason"], "window_closed", "{}", res.body);
    let res = app.post(LINKS, &acme.key, json!({"sku": "K-1", "conversation_id": conversation + 1_000})).await;
    assert_error(&res, 404);
    assert_invalid(
        &app.post(LINKS, &acme.key, json!({"sku": "K-1", "to": e164("0000"), "conversation_id": conversation})).await,
        "to",
    );

    // a day later the window is closed: 409, and no basket made
    app.advance(Duration::hours(25)).await;
    for recipient in [json!({"to": e164("0000")}), json!({"conversation_id": conversation})] {
        let mut body = json!({"items": [{"sku": "K-1"}]});
        body.as_object_mut().expect("object").extend(recipient.as_object().cloned().unwrap_or_default());
        let res = app.post(LINKS, &acme.key, body).await;
        assert_error(&res, 409);
        assert_eq!(res.body["reason"], "window_closed", "{}", res.body);
    }
    assert_eq!(carts(&app, &acme.key, "").await["pagination"]["total"], 3, "two sent, one unsent");
}

#[actix_web::test]
async fn a_sent_basket_left_with_items_is_abandoned_and_every_unordered_one_expires() {
    let app = spawn().await;
    let (acme, hook) = seller(&app, SELLER).await;
    stocked_shop(&app, &acme.key).await;
    customer_writes(&app, &hook, &acme.key, "0000").await;
    let to = e164("0000");
    let sent = link(&app, &acme.key, json!({"items": [{"sku": "K-1", "quantity": 2}], "to": to})).await["cart"].clone();
    let later = link(&app, &acme.key, json!({"items": [{"sku": "C-1"}], "to": to})).await["cart"].clone();
    let empty = link(&app, &acme.key, json!({"category": "Hot drinks", "to": to})).await["cart"].clone();
    let open = link(&app, &acme.key, json!({"items": [{"sku": "T-1"}]})).await["cart"].clone();
    let ordered = link(&app, &acme.key, json!({"items": [{"sku": "U-1"}]})).await["cart"].clone();
    assert_eq!((&sent["status"], &empty["status"], &open["status"]), (&json!("sent"), &json!("sent"), &json!("open")));
    assert_status(&submit(&app, &page_path(&ordered), &[("qty:U-1", "1")]).await, 303);
    let status = |basket: Value| {
        let app = &app;
        let key = acme.key.clone();
        async move { cart(app, &key, &id_of(&basket).to_string()).await["status"].as_str().unwrap_or_default().to_owned() }
    };

    app.advance(Duration::hours(23)).await;
    assert_eq!(status(sent.clone()).await, "sent", "not yet a day");
    assert!(events(&app, acme.tenant, "cart.abandoned").await.is_empty());

    app.advance(Duration::hours(1)).await;
    assert_eq!(status(sent.clone()).await, "abandoned");
    assert_eq!(status(later.clone()).await, "abandoned");
    assert_eq!(status(empty.clone()).await, "sent", "sent without items: nothing was left");
    assert_eq!(status(open.clone()).await, "open", "never sent in a chat: never abandoned");
    assert_eq!(status(ordered.clone()).await, "ordered");
    let abandoned = events(&app, acme.tenant, "cart.abandoned").await;
    assert_eq!(abandoned.len(), 2, "one event per abandoned basket: {abandoned:?}");
    let now = cart(&app, &acme.key, &id_of(&sent).to_string()).await;
    let event = abandoned.iter().find(|e| e["cart"]["id"] == sent["id"]).unwrap_or_else(|| panic!("{abandoned:?}"));
    assert_eq!(event["cart"], now, "the event carries the basket as the API shows it");
    assert_eq!(event["cart"]["status"], "abandoned");
    assert_eq!(event["cart"]["items"], sent["items"]);

    // an abandoned basket can still be ordered until it expires
    assert_status(&submit(&app, &page_path(&later), &[("qty:C-1", "2")]).await, 303);
    assert_eq!(status(later.clone()).await, "ordered");

    app.advance(Duration::days(6) - Duration::minutes(1)).await;
    assert_eq!(status(sent.clone()).await, "abandoned", "not yet a week");
    assert_eq!(status(open.clone()).await, "open");
    app.advance(Duration::minutes(1)).await;
    for basket in [&sent, &empty, &open] {
        assert_eq!(status(basket.clone()).await, "expired", "{basket}");
    }
    assert_eq!(status(ordered.clone()).await, "ordered", "an ordered basket does not expire");
    assert_eq!(status(later.clone()).await, "ordered");
    assert_eq!(
        cart_events(&app, &acme).await,
        ["cart.submitted", "cart.abandoned", "cart.abandoned", "cart.submitted"],
        "expiry sends nothing, and nothing is sent twice"
    );
    let expired = carts(&app, &acme.key, "?status=expired").await;
    assert_eq!(expired["pagination"]["total"], 3);
}

#[actix_web::test]
async fn a_customer_submits_a_basket_from_its_page_as_an_order() {
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = stocked_shop(&app, &acme.key).await;
    let basket = link(
        &app,
        &acme.key,
        json!({"category": "hot-drinks", "items": [
            {"sku": "K-1", "variant": "500g", "addons": ["milk"], "quantity": 2},
            {"sku": "C-1", "quantity": 1},
        ]}),
    )
    .await["cart"]
        .clone();
    let path = page_path(&basket);
    let page = open_page(&app, &path).await;
    assert_status(&page, 200);
    let text = html(&page);
    assert!(text.contains("name=\"qty:K-1\" value=\"2\""), "{text}");
    assert!(text.contains("Subtotal TZS 12,000.00"), "{text}");
    assert!(text.contains("Place order"), "{text}");

    // K-1 to 3, C-1 taken out, T-1 (offered by the category) added; U-1 is not on offer
    let form = [("qty:K-1", "3"), ("qty:C-1", "0"), ("qty:T-1", "2"), ("qty:U-1", "5"), ("name", "Amina")];
    let res = submit(&app, &path, &form).await;
    assert_eq!(res.status, 303, "{}", res.body);
    assert_eq!(res.header("location"), Some(path.as_str()));

    let id = id_of(&basket).to_string();
    let ordered = cart(&app, &acme.key, &id).await;
    assert_eq!(ordered["status"], "ordered");
    assert_eq!(lines(&ordered["items"]), owned(&[("K-1", 3), ("T-1", 2)]));
    assert_eq!((&ordered["items"][0]["variant"], &ordered["items"][0]["options"]), (&json!("500g"), &json!(["milk"])));
    assert_eq!(ordered["subtotal_minor"], 3 * 450_000 + 2 * 200_000);
    assert_eq!(time_of(&ordered["submitted_at"]), app.clock.now());
    let order_id = ordered["order_id"].as_i64().unwrap_or_else(|| panic!("an order id: {ordered}"));
    let order = read_order(&app, &acme.key, order_id).await;
    assert_eq!(lines(&order["lines"]), owned(&[("K-1", 3), ("T-1", 2)]));
    assert_eq!(order["platform"], "storefront", "not from a chat");
    assert_eq!(order["catalogue_id"], shop);
    assert_eq!(order["customer_name"], "Amina");
    assert_eq!(order["conversation_id"], Value::Null);
    assert_eq!(order["total_minor"], ordered["subtotal_minor"]);
    let submitted = events(&app, acme.tenant, "cart.submitted").await;
    assert_eq!(submitted.len(), 1);
    assert_eq!(submitted[0]["cart"], ordered);
    assert_eq!(submitted[0]["order"]["id"], order_id);
    assert_eq!(lines(&submitted[0]["order"]["lines"]), owned(&[("K-1", 3), ("T-1", 2)]));
    let received = events(&app, acme.tenant, "order.received").await;
    assert_eq!(received.len(), 1, "the order was taken as any other: {received:?}");

    // the page says so, and takes it no more
    let page = open_page(&app, &path).await;
    assert_status(&page, 200);
    let text = html(&page);
    assert!(text.contains(&format!("Thank you! Your order #{order_id} is placed.")), "{text}");
    assert!(!text.contains("Place order"), "{text}");
    let res = submit(&app, &path, &[("qty:K-1", "9"), ("name", "Amina")]).await;
    assert_eq!(res.status, 409, "{}", res.body);
    assert!(html(&res).contains("role=\"alert\""), "{}", res.body);
    assert_eq!(cart(&app, &acme.key, &id).await, ordered, "the second submit changed nothing");
    assert_eq!(app.get(ORDERS, &acme.key).await.data()["pagination"]["total"], 1);
    assert_eq!(events(&app, acme.tenant, "cart.submitted").await.len(), 1);
}

#[actix_web::test]
async fn a_basket_from_a_chat_becomes_a_chat_order_of_its_conversation() {
    let app = spawn().await;
    let (acme, hook) = seller(&app, SELLER).await;
    stocked_shop(&app, &acme.key).await;
    let conversation = customer_writes(&app, &hook, &acme.key, "0000").await;
    let basket = link(&app, &acme.key, json!({"sku": "K-1", "to": e164("0000")})).await["cart"].clone();
    let res = submit(&app, &page_path(&basket), &[("qty:K-1", "4"), ("name", "Amina Juma")]).await;
    assert_status(&res, 303);
    let ordered = cart(&app, &acme.key, &id_of(&basket).to_string()).await;
    assert_eq!(ordered["status"], "ordered");
    assert_eq!(ordered["conversation_id"], conversation);
    let order = read_order(&app, &acme.key, ordered["order_id"].as_i64().expect("an order")).await;
    assert_eq!(order["platform"], "chat");
    assert_eq!(order["conversation_id"], conversation);
    assert_eq!(lines(&order["lines"]), owned(&[("K-1", 4)]));
    assert_eq!(order["customer_name"], "Amina Juma");
    let submitted = events(&app, acme.tenant, "cart.submitted").await;
    assert_eq!(submitted.len(), 1);
    assert_eq!((&submitted[0]["cart"], &submitted[0]["order"]["platform"]), (&ordered, &json!("chat")));
}

#[actix_web::test]
async fn the_basket_page_refuses_an_empty_a_bad_or_an_expired_submit() {
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    stocked_shop(&app, &acme.key).await;
    let basket =
        link(&app, &acme.key, json!({"items": [{"sku": "K-1", "quantity": 2}, {"sku": "C-1"}]})).await["cart"].clone();
    let path = page_path(&basket);
    let id = id_of(&basket).to_string();

    // nothing to order: 422, the page says why and keeps the form
    let res = submit(&app, &path, &[("qty:K-1", "0"), ("qty:C-1", "0"), ("name", "Amina")]).await;
    assert_eq!(res.status, 422, "{}", res.body);
    let text = html(&res);
    assert!(text.contains("<p role=\"alert\" class=\"out\">Choose at least one product.</p>"), "{text}");
    assert!(text.contains("Place order"), "{text}");
    for (quantity, why) in [
        ("two", "Quantities are whole numbers."),
        ("1001", "A quantity is 0 to 1000."),
        ("-1", "A quantity is 0 to 1000."),
    ] {
        let res = submit(&app, &path, &[("qty:K-1", quantity)]).await;
        assert_eq!(res.status, 422, "{quantity}: {}", res.body);
        assert!(html(&res).contains(why), "{quantity}: {}", res.body);
    }
    assert_eq!(cart(&app, &acme.key, &id).await, basket, "the refusals changed nothing");
    assert_eq!(events(&app, acme.tenant, "cart.submitted").await.len(), 0);

    // an unknown token is no basket
    for res in
        [open_page(&app, "/basket/not-a-token").await, submit(&app, "/basket/not-a-token", &[("qty:K-1", "1")]).await]
    {
        assert_eq!(res.status, 404, "{}", res.body);
        assert!(html(&res).contains("Basket not found"), "{}", res.body);
    }

    // a week later the basket has expired: the page says so and takes no order
    app.advance(Duration::days(7)).await;
    assert_eq!(cart(&app, &acme.key, &id).await["status"], "expired");
    let page = open_page(&app, &path).await;
    assert_status(&page, 200);
    assert!(html(&page).contains("This basket has expired."), "{}", page.body);
    assert!(!html(&page).contains("Place order"), "{}", page.body);
    let res = submit(&app, &path, &[("qty:K-1", "1"), ("name", "Amina")]).await;
    assert_eq!(res.status, 409, "{}", res.body);
    assert!(html(&res).contains("role=\"alert\""), "{}", res.body);
    assert!(html(&res).contains("This basket has expired."), "{}", res.body);
    let expired = cart(&app, &acme.key, &id).await;
    assert_eq!((&expired["status"], &expired["order_id"]), (&json!("expired"), &Value::Null));
    assert_eq!(app.get(ORDERS, &acme.key).await.data()["pagination"]["total"], 0);
}

#[actix_web::test]
async fn another_tenant_neither_sees_nor_links_our_baskets() {
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = stocked_shop(&app, &acme.key).await;
    let ours = link(&app, &acme.key, json!({"sku": "K-1"})).await["cart"].clone();
    let other = app.account(MANAGER).await;
    stocked_shop(&app, &other.key).await;
    let theirs = link(&app, &other.key, json!({"sku": "K-1"})).await["cart"].clone();

    let code = ours["code"].as_str().unwrap_or_default();
    for reference in [code.to_owned(), code.to_lowercase(), id_of(&ours).to_string()] {
        assert_error(&app.get(&format!("{CARTS}/{reference}"), &other.key).await, 404);
    }
    assert_eq!(ids(&carts(&app, &other.key, "").await), [id_of(&theirs)]);
    assert_eq!(ids(&carts(&app, &acme.key, "").await), [id_of(&ours)]);
    let res = app.post(LINKS, &other.key, json!({"catalogue_id": shop, "sku": "K-1"})).await;
    assert_error(&res, 404);
    assert_eq!(carts(&app, &other.key, "").await["pagination"]["total"], 1, "nothing made in our shop");
    assert_eq!(carts(&app, &acme.key, "").await["pagination"]["total"], 1);
}

#[actix_web::test]
async fn a_customer_orders_a_basket_in_a_real_browser() {
    let app = spawn().await;
    let server = app.listen();
    let acme = app.account(MANAGER).await;
    stocked_shop(&app, &acme.key).await;
    let basket = link(
        &app,
        &acme.key,
        json!({"sku": "T-1", "items": [{"sku": "K-1", "quantity": 2, "addons": ["milk"]}, {"sku": "C-1"}]}),
    )
    .await["cart"]
        .clone();
    let url = basket["url"].as_str().unwrap_or_default().replacen(ORIGIN, &server.url, 1);

    let browser = Browser::start().await;
    browser.goto(&url).await.expect("open the basket");
    let heading = browser.wait().for_element(Locator::Css("h1")).await.expect("the page");
    assert_eq!(heading.text().await.expect("text"), "Your basket at Duka Letu");
    let row = browser.find(Locator::Css("tr[data-sku='K-1']")).await.expect("the K-1 line");
    let row = row.text().await.expect("text");
    assert!(row.contains("Kahawa 500g") && row.contains("with milk") && row.contains("TZS 9,000.00"), "{row}");
    let subtotal = browser.find(Locator::Css("p.price")).await.expect("the subtotal").text().await.expect("text");
    assert_eq!(subtotal, "Subtotal TZS 12,000.00");

    // five of K-1, the offered T-1 left at 0, a name, and the order placed
    let quantity = browser.find(Locator::Css("input[name='qty:K-1']")).await.expect("K-1's quantity");
    quantity.clear().await.expect("clear");
    quantity.send_keys("5").await.expect("type");
    browser.find(Locator::Id("name")).await.expect("the name").send_keys("Amina Juma").await.expect("type");
    browser
        .find(Locator::XPath("//button[text()='Place order']"))
        .await
        .expect("the button")
        .click()
        .await
        .expect("click");
    let done = browser.wait().for_element(Locator::Css("p.done")).await.expect("the confirmation");
    let done = done.text().await.expect("text");
    browser.close().await;

    let ordered = cart(&app, &acme.key, &id_of(&basket).to_string()).await;
    assert_eq!(ordered["status"], "ordered", "{ordered}");
    let order_id = ordered["order_id"].as_i64().unwrap_or_else(|| panic!("an order: {ordered}"));
    assert_eq!(done, format!("Thank you! Your order #{order_id} is placed."));
    let order = read_order(&app, &acme.key, order_id).await;
    assert_eq!(lines(&order["lines"]), owned(&[("K-1", 5), ("C-1", 1)]));
    assert_eq!(order["customer_name"], "Amina Juma");
    assert_eq!(order["total_minor"], 5 * 450_000 + 300_000);
}
