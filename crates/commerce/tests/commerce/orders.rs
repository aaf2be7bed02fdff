//! Orders: the intake's rules, status changes and their stock, the hold's expiry, tenant
//! isolation and the `Idempotency-Key` replay.

use commerce::orders::{NewOrder, StatusChange};
use commerce::{CatalogueId, Order, OrderId};
use kernel::{Caller, ErrorKind, Permission};
use serde_json::{Value, json};
use store::idempotency::{Answer, Key};

use crate::common::{Env, assert_fields, assert_kind, body, env, only};

async fn place(env: &Env, caller: &Caller, shop: CatalogueId, order: Value) -> Order {
    match env.service.create_order(caller, shop, body::<NewOrder>(order), None).await.expect("order") {
        Answer::Done(order) => order,
        Answer::Replay(_) => panic!("not a replay"),
    }
}

async fn set(env: &Env, caller: &Caller, order: &Order, status: &str) -> Result<Order, kernel::Error> {
    env.service.set_order_status(caller, OrderId(order.id), StatusChange { status: status.to_owned() }).await
}

/// A `svc` shop holding 48 hours, with 10 of `A` on hand.
async fn stocked(env: &Env, caller: &Caller) -> CatalogueId {
    let shop = env.shop(caller, json!({"name": "Duka", "stock_policy": "svc", "reservation_ttl_hours": 48})).await;
    env.product(caller, shop, "A", json!({"name": "Kahawa", "price": 1800, "inventory": 10})).await;
    shop
}

#[tokio::test]
async fn a_bad_order_is_refused_with_every_problem_and_makes_nothing() {
    let env = env().await;
    let acme = env.tenant("Acme").await;
    let shop = stocked(&env, &acme).await;
    let bad = json!({"platform": "chat", "customer_name": "n".repeat(192), "lines": [
        {"sku": "A", "quantity": 0},
        {"quantity": 1},
        {"sku": "A", "quantity": 100_001},
    ]});
    let refused = env.service.create_order(&acme, shop, body(bad), None).await.expect_err("refused");
    assert_fields(&refused, &["customer_name", "lines[0].quantity", "lines[1].sku", "lines[2].quantity", "platform"]);
    let none = env.service.create_order(&acme, shop, body(json!({"lines": []})), None).await;
    assert_fields(&none.expect_err("refused"), &["lines"]);

    let filter = Default::default();
    let page = env.service.list_orders(&acme, &filter, kernel::PageRequest { page: 1, per_page: 25 });
    assert_eq!(page.await.expect("orders").pagination.total, 0);
    assert_eq!(env.read_product(&acme, shop, "A").await.reserved, 0, "nothing held");
}

#[tokio::test]
async fn an_order_is_priced_frozen_and_holds_its_units() {
    let env = env().await;
    let acme = env.tenant("Acme").await;
    let shop = stocked(&env, &acme).await;
    let order = place(
        &env,
        &acme,
        shop,
        json!({"customer_chat_id": "255712345678", "lines": [
            {"retailer_id": "A", "quantity": 3},
            {"sku": "GONE", "quantity": 1},
        ]}),
    )
    .await;
    assert_eq!((order.status.as_str(), order.platform.as_str()), ("pending", "manual"));
    assert_eq!(order.customer_handle.as_deref(), Some("255712345678"));
    assert_eq!((order.total_minor, order.currency.as_str()), (5400, "TZS"));
    assert!(order.lines[1].unresolved && order.needs_attention);
    assert_eq!(order.reservation.state, "held");
    assert_eq!(env.read_product(&acme, shop, "A").await.reserved, 3);
}

#[tokio::test]
async fn confirming_commits_the_units_and_cancelling_puts_them_back() {
    let env = env().await;
    let acme = env.tenant("Acme").await;
    let shop = stocked(&env, &acme).await;
    let order = place(&env, &acme, shop, json!({"lines": [{"sku": "A", "quantity": 4}]})).await;

    let confirmed = set(&env, &acme, &order, "Confirmed").await.expect("allowed");
    assert_eq!((confirmed.status.as_str(), confirmed.reservation.state.as_str()), ("confirmed", "committed"));
    let a = env.read_product(&acme, shop, "A").await;
    assert_eq!((a.inventory, a.reserved), (Some(6), 0), "sold: the units left the count on hand");

    let cancelled = set(&env, &acme, &confirmed, "cancelled").await.expect("allowed");
    assert_eq!(cancelled.reservation.state, "released");
    let a = env.read_product(&acme, shop, "A").await;
    assert_eq!((a.inventory, a.reserved), (Some(10), 0), "restocked");

    let refused = set(&env, &acme, &cancelled, "lost").await.expect_err("unknown status");
    assert_fields(&refused, &["status"]);
}

#[tokio::test]
async fn only_a_pending_orders_hold_expires() {
    let env = env().await;
    let acme = env.tenant("Acme").await;
    let shop = stocked(&env, &acme).await;
    let pending = place(&env, &acme, shop, json!({"lines": [{"sku": "A", "quantity": 2}]})).await;
    let confirmed = place(&env, &acme, shop, json!({"lines": [{"sku": "A", "quantity": 3}]})).await;
    set(&env, &acme, &confirmed, "confirmed").await.expect("confirmed");

    // before its time a hold stays
    env.service.expire_hold(acme.tenant_id, OrderId(pending.id)).await.expect("early");
    assert_eq!(env.read_product(&acme, shop, "A").await.reserved, 2);

    env.clock.advance(time::Duration::hours(49));
    env.service.expire_hold(acme.tenant_id, OrderId(pending.id)).await.expect("expired");
    env.service.expire_hold(acme.tenant_id, OrderId(confirmed.id)).await.expect("refused quietly");
    let pending = env.service.get_order(&acme, OrderId(pending.id)).await.expect("order");
    assert_eq!((pending.status.as_str(), pending.reservation.state.as_str()), ("pending", "released"));
    let confirmed = env.service.get_order(&acme, OrderId(confirmed.id)).await.expect("order");
    assert_eq!((confirmed.status.as_str(), confirmed.reservation.state.as_str()), ("confirmed", "committed"));
    let a = env.read_product(&acme, shop, "A").await;
    assert_eq!((a.inventory, a.reserved), (Some(7), 0));
}

#[tokio::test]
async fn another_tenants_orders_and_shops_are_not_found() {
    let env = env().await;
    let acme = env.tenant("Acme").await;
    let other = env.tenant("Other").await;
    let shop = stocked(&env, &acme).await;
    let order = place(&env, &acme, shop, json!({"lines": [{"sku": "A", "quantity": 1}]})).await;

    assert_kind(env.service.get_order(&other, OrderId(order.id)).await, ErrorKind::NotFound);
    assert_kind(set(&env, &other, &order, "cancelled").await, ErrorKind::NotFound);
    let into_theirs =
        env.service.create_order(&other, shop, body(json!({"lines": [{"sku": "A", "quantity": 1}]})), None);
    assert_kind(into_theirs.await.map(|_| ()), ErrorKind::NotFound);
    assert_eq!(env.service.get_order(&acme, OrderId(order.id)).await.expect("still").status, "pending");
}

#[tokio::test]
async fn a_repeated_key_replays_the_first_order_once_the_caller_may_order() {
    let env = env().await;
    let acme = env.tenant("Acme").await;
    let shop = stocked(&env, &acme).await;
    let key = || Key::parse("cart-42").expect("key");
    let lines = json!({"lines": [{"sku": "A", "quantity": 2}]});

    let first = env.service.create_order(&acme, shop, body(lines.clone()), key()).await.expect("first");
    let Answer::Done(first) = first else { panic!("the first does the work") };
    let again = env.service.create_order(&acme, shop, body(lines.clone()), key()).await.expect("again");
    let Answer::Replay(again) = again else { panic!("a replay") };
    assert_eq!(again["id"], first.id);
    assert_eq!(env.read_product(&acme, shop, "A").await.reserved, 2, "held once");

    let changed = env.service.create_order(&acme, shop, body(json!({"lines": [{"sku": "A", "quantity": 5}]})), key());
    assert_kind(changed.await.map(|_| ()), ErrorKind::Validation);

    let viewer = only(&acme, &[Permission::CATALOGUE_VIEW]);
    let refused = env.service.create_order(&viewer, shop, body(lines), key()).await;
    assert_kind(refused.map(|_| ()), ErrorKind::Forbidden);
}
