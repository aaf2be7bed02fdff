//! Stock: holds never oversell, and an inventory push reports every bad row at once.

use commerce::orders::NewOrder;
use commerce::stock::LevelsPush;
use serde_json::json;

use crate::common::{assert_fields, body, env};

fn order(lines: serde_json::Value) -> NewOrder {
    body(json!({"lines": lines}))
}

#[tokio::test]
async fn the_last_units_go_to_one_order_and_the_next_is_short() {
    let env = env().await;
    let acme = env.tenant("Acme").await;
    let shop = env.shop(&acme, json!({"name": "Duka", "stock_policy": "svc"})).await;
    env.product(&acme, shop, "A", json!({"name": "Kahawa", "price": 1800, "inventory": 3})).await;

    let first = env.service.create_order(&acme, shop, order(json!([{"sku": "A", "quantity": 2}])), None).await;
    let store::idempotency::Answer::Done(first) = first.expect("first order") else { panic!("not a replay") };
    assert_eq!((first.lines[0].reserved, first.lines[0].stock_short), (2, false));

    let second = env.service.create_order(&acme, shop, order(json!([{"sku": "A", "quantity": "2"}])), None).await;
    let store::idempotency::Answer::Done(second) = second.expect("second order") else { panic!("not a replay") };
    assert_eq!((second.lines[0].reserved, second.lines[0].stock_short), (1, true), "only one unit was left");
    assert!(second.needs_attention);

    let a = env.read_product(&acme, shop, "A").await;
    assert_eq!((a.inventory, a.reserved, a.available), (Some(3), 3, Some(0)));
    assert_eq!(a.availability, "out of stock");
}

#[tokio::test]
async fn a_push_names_every_bad_row_and_lands_nothing() {
    let env = env().await;
    let acme = env.tenant("Acme").await;
    let shop = env.shop(&acme, json!({"name": "Duka", "stock_policy": "svc"})).await;
    env.product(&acme, shop, "A", json!({"name": "Kahawa", "price": 1800, "inventory": 3})).await;

    let push: LevelsPush = body(json!({"levels": [
        {"sku": "A", "inventory": 50},
        {"sku": "B", "inventory": -1},
        {"inventory": 4},
        {"retailer_id": "D", "inventory": "lots"},
    ]}));
    let refused = env.service.push_levels(&acme, shop, push).await.expect_err("refused");
    assert_fields(&refused, &["levels[1].inventory", "levels[2].sku", "levels[3].inventory"]);
    assert_eq!(env.read_product(&acme, shop, "A").await.inventory, Some(3), "nothing landed");

    let too_many: LevelsPush = body(json!({"levels": vec![json!({"sku": "A", "inventory": 1}); 5_001]}));
    assert_fields(&env.service.push_levels(&acme, shop, too_many).await.expect_err("refused"), &["levels"]);

    let pushed =
        env.service.push_levels(&acme, shop, body(json!({"levels": [{"retailer_id": "A", "inventory": "7"}]})));
    let pushed = pushed.await.expect("pushed");
    assert_eq!((pushed.updated, pushed.derived[0].inventory), (1, Some(7)));
}
