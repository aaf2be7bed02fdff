//! Orders from chat: an inbound `order` message becomes an order of the shop whose catalogue the
//! cart came from (platform `chat`, the customer's chat id, the conversation), once however often
//! the provider delivers it; and a lead upserted with a `conversation_id` is found by it.

use api_tests::{json, spawn};
use serde_json::Value;

use super::{APP_SECRET, chat_account, chat_id, deliver, delivery};
use crate::commerce::support::{events, shop, stocked};
use crate::sms::support::assert_status;

fn cart(catalog: &str, wamid: &str, items: Value) -> Value {
    delivery(json!({
        "contacts": [{"profile": {"name": "Amina"}, "wa_id": chat_id("0000")}],
        "messages": [{"from": chat_id("0000"), "id": wamid, "timestamp": "1764230400", "type": "order",
            "order": {"catalog_id": catalog, "text": "Leteni kesho", "product_items": items}}],
    }))
}

#[actix_web::test]
async fn a_cart_sent_in_chat_becomes_one_order_of_its_shop() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let first = shop(&app, chat.key(), "svc").await;
    let second = shop(&app, chat.key(), "svc").await;
    stocked(&app, chat.key(), second, "KAHAWA-1KG", 12_000, json!(10)).await;
    api_tests::sql_exec(&app.pool, &format!("UPDATE catalogues SET meta_catalogue_id = '8871234' WHERE id = {second}"))
        .await;
    let items = json!([
        {"product_retailer_id": "KAHAWA-1KG", "quantity": 2, "item_price": "11000", "currency": "TZS"},
        {"product_retailer_id": "UNKNOWN", "quantity": 1, "item_price": "500", "currency": "TZS"},
    ]);
    let body = cart("8871234", "wamid.ORDER1", items);
    let res = deliver(&app, &chat.hook(), Some(APP_SECRET), &body).await;
    assert_status(&res, 200);
    // the provider delivers it again: still one order
    deliver(&app, &chat.hook(), Some(APP_SECRET), &body).await;
    app.run_jobs().await;

    let orders = events(&app, chat.tenant(), "order.received").await;
    assert_eq!(orders.len(), 1, "{orders:?}");
    let order = &orders[0]["order"];
    assert_eq!(order["catalogue_id"], second, "the shop of the cart's catalogue, not {first}");
    assert_eq!(order["platform"], "chat");
    assert_eq!(order["customer_handle"], chat_id("0000"));
    assert_eq!(order["customer_name"], "Amina");
    let conversations = app.get("/api/v3/chat/conversations", chat.key()).await;
    assert_eq!(order["conversation_id"], conversations.data()["items"][0]["id"]);
    // the shop's own price, not the cart's
    let line =
        order["lines"].as_array().into_iter().flatten().find(|l| l["sku"] == "KAHAWA-1KG").cloned().unwrap_or_default();
    assert_eq!(line["unit_price_minor"], 12_000, "{order}");
    assert_eq!(line["quantity"], 2);

    // the job running again (a crash after the order) replays, it does not order twice
    let message: Vec<Value> =
        api_tests::sql_rows(&app.pool, "SELECT id FROM messages WHERE gateway_message_id = 'wamid.ORDER1'").await;
    let job = messaging::chat::orders::TakeChatOrder {
        tenant_id: chat.tenant(),
        message_id: message[0]["id"].as_i64().unwrap_or_default(),
    };
    let mut conn = app.conn().await;
    store::jobs::enqueue(
        &mut conn,
        &job,
        store::jobs::Enqueue { tenant_id: Some(chat.tenant()), ..Default::default() },
    )
    .await
    .expect("job");
    app.run_jobs().await;
    assert_eq!(events(&app, chat.tenant(), "order.received").await.len(), 1);
}

#[actix_web::test]
async fn a_workspace_with_one_shop_takes_every_chat_order_there() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    let only = shop(&app, chat.key(), "svc").await;
    stocked(&app, chat.key(), only, "CHAI", 3_000, json!(5)).await;
    let body =
        cart("catalogue-not-connected", "wamid.ORDER2", json!([{"product_retailer_id": "CHAI", "quantity": "3"}]));
    deliver(&app, &chat.hook(), Some(APP_SECRET), &body).await;
    app.run_jobs().await;
    let orders = events(&app, chat.tenant(), "order.received").await;
    assert_eq!(orders.len(), 1);
    assert_eq!(orders[0]["order"]["catalogue_id"], only);
    assert_eq!(orders[0]["order"]["lines"][0]["quantity"], 3);
}

#[actix_web::test]
async fn a_lead_upserted_with_a_conversation_is_found_by_its_customer() {
    let app = spawn().await;
    let chat = chat_account(&app, "all").await;
    deliver(&app, &chat.hook(), Some(APP_SECRET), &super::text_from(&chat_id("0000"), "wamid.L1", "Bei gani?")).await;
    let conversations = app.get("/api/v3/chat/conversations", chat.key()).await;
    let conversation = conversations.data()["items"][0]["id"].as_i64().unwrap_or_default();
    let res = app.post("/api/v3/leads", chat.key(), json!({"conversation_id": conversation})).await;
    assert!(res.status == 200 || res.status == 201, "{}", res.body);
    let lead = res.data()["lead"].clone();
    assert_eq!(lead["phone"], super::e164("0000"), "{lead}");
    assert_eq!(lead["source_channel"], "chat");
    assert_eq!(lead["name"], "Amina", "the customer's profile name");
    // the same customer by phone is the same lead
    let again = app.post("/api/v3/leads", chat.key(), json!({"phone": super::e164("0000")})).await;
    assert_eq!(again.data()["lead"]["id"], lead["id"]);
    // a phone sent with it must be the conversation's number
    let res =
        app.post("/api/v3/leads", chat.key(), json!({"conversation_id": conversation, "phone": "+255712349999"})).await;
    crate::sms::support::assert_field_error(&res, "conversation_id");
    // another tenant's conversation does not belong to this workspace
    let other = chat_account(&app, "all").await;
    let res = app.post("/api/v3/leads", other.key(), json!({"conversation_id": conversation})).await;
    crate::framework::assert_error(&res, 422);
}
