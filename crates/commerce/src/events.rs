//! The order and catalogue events (contract: Payload shapes), and their samples for the webhooks
//! catalogue, built by the same code.

use kernel::{Error, TenantId};
use serde_json::{Map, Value, json};
use time::OffsetDateTime;
use time::macros::datetime;

use crate::orders::{Line, Order, Reservation};
use crate::products::Product;
use crate::status::{Hold, OrderStatus};
use crate::sync::Report;

/// `amount` minor units of `currency` as a number in main units (the deprecated fields' unit).
fn main_units(amount: i64, currency: &str) -> Value {
    let scale = 10_i64.pow(kernel::money::exponent(currency));
    if amount % scale == 0 { json!(amount / scale) } else { json!(amount as f64 / scale as f64) }
}

/// `{order, previous_status?}` plus the deprecated duplicates kept for one release.
pub fn order_payload(order: &Order, previous_status: Option<&str>) -> Value {
    let mut payload = Map::new();
    payload.insert("order".into(), serde_json::to_value(order).unwrap_or(Value::Null));
    if let Some(previous) = previous_status {
        payload.insert("previous_status".into(), json!(previous));
    }
    let items: Vec<Value> = order
        .lines
        .iter()
        .map(|line| {
            let currency = line.currency.as_deref().unwrap_or(&order.currency);
            json!({
                "product_retailer_id": line.sku,
                "quantity": line.quantity,
                "item_price": line.unit_price_minor.map(|p| main_units(p, currency)),
                "currency": currency,
            })
        })
        .collect();
    payload.insert("order_id".into(), json!(order.id));
    payload.insert("customer_chat_id".into(), json!(order.customer_handle));
    payload.insert("product_items".into(), Value::Array(items));
    payload.insert("total_amount".into(), main_units(order.total_minor, &order.currency));
    payload.insert("total_currency".into(), json!(order.currency));
    Value::Object(payload)
}

pub(crate) async fn order_event(
    conn: &mut store::Conn,
    tenant: TenantId,
    order: &Order,
    name: &str,
    previous_status: Option<&str>,
    now: OffsetDateTime,
) -> Result<(), Error> {
    store::outbox::emit(conn, tenant, name, order_payload(order, previous_status), now).await?;
    Ok(())
}

/// `sync.completed`: the report under `sync`, without `problems`.
pub fn sync_completed(report: &Report) -> Value {
    let mut sync = report.clone();
    sync.problems = None;
    json!({ "catalogue_id": report.catalogue_id, "sync": sync })
}

/// `stock.low`.
pub fn stock_low(catalogue: i64, product: &Product, threshold: i32) -> Value {
    json!({
        "catalogue_id": catalogue,
        "product": product,
        "available": product.available,
        "low_stock_threshold": threshold,
    })
}

/// `cart.submitted`: the basket, now `ordered`, and the order it became.
pub fn cart_submitted(basket: &crate::baskets::Basket, order: &Order) -> Value {
    json!({ "cart": basket, "order": order })
}

/// `cart.abandoned`: the basket a customer left with items.
pub fn cart_abandoned(basket: &crate::baskets::Basket) -> Value {
    json!({ "cart": basket })
}

/// `product.blocked`: once per product per refusing platform, with the platform's words.
pub fn product_blocked(catalogue: i64, product: &Product, platform: &str, problem: &str) -> Value {
    json!({ "catalogue_id": catalogue, "platform": platform, "problem": problem, "product": product })
}

/// `product.drifted`: the platform's copy differs from the shop's in `fields` (each with both
/// values); `resolution` says what the shop's `source_of_truth` made of it: `pushed` (the
/// shop's copy sent back) or `pulled` (the platform's values taken into the shop).
pub fn product_drifted(
    catalogue: i64,
    product: &Product,
    platform: &str,
    fields: &[crate::drift::Difference],
    source_of_truth: &str,
) -> Value {
    let resolution = if source_of_truth == "platform" { "pulled" } else { "pushed" };
    json!({
        "catalogue_id": catalogue,
        "platform": platform,
        "product": product,
        "fields": fields,
        "source_of_truth": source_of_truth,
        "resolution": resolution,
    })
}

const SAMPLE_AT: OffsetDateTime = datetime!(2026-11-26 09:28:41 UTC);

fn sample_line(sku: &str, name: &str, quantity: i32, unit: i64, reserved: i32) -> Line {
    Line {
        sku: sku.to_owned(),
        name: Some(name.to_owned()),
        quantity,
        unit_price_minor: Some(unit),
        line_total_minor: Some(unit * i64::from(quantity)),
        currency: Some("TZS".to_owned()),
        reserved,
        stock_short: false,
        unresolved: false,
    }
}

fn sample_order(status: OrderStatus, reserved: [i32; 2]) -> Order {
    let hold = status.hold();
    Order {
        id: 1042,
        catalogue_id: 7,
        platform: "chat".to_owned(),
        status: status.as_str().to_owned(),
        needs_attention: false,
        stock_policy: "svc".to_owned(),
        customer_handle: Some("255712345678".to_owned()),
        customer_chat_id: Some("255712345678".to_owned()),
        customer_name: Some("Amina Juma".to_owned()),
        lines: vec![
            sample_line("DUKA-00012", "Kahawa ya Kilimanjaro 500g", 2, 1_800_000, reserved[0]),
            sample_line("DUKA-00031", "Chai ya Tangawizi 250g", 1, 650_000, reserved[1]),
        ],
        total_minor: 4_250_000,
        currency: "TZS".to_owned(),
        conversation_id: Some(5531),
        priced_at: SAMPLE_AT,
        reservation: Reservation {
            state: hold.as_str().to_owned(),
            expires_at: (hold == Hold::Held).then(|| SAMPLE_AT + time::Duration::hours(48)),
        },
        payment_status: "unpaid".to_owned(),
        created_at: SAMPLE_AT,
        updated_at: SAMPLE_AT,
    }
}

fn sample_basket(status: &str) -> crate::baskets::Basket {
    let items = vec![crate::baskets::BasketItem {
        sku: "DUKA-00012".to_owned(),
        name: "Kahawa ya Kilimanjaro 500g".to_owned(),
        variant: Some("ground".to_owned()),
        options: vec!["gift wrap".to_owned()],
        note: Some("for Mama Neema".to_owned()),
        quantity: 2,
        unit_price_minor: 1_800_000,
        line_total_minor: 3_600_000,
        currency: "TZS".to_owned(),
    }];
    crate::baskets::Basket {
        id: 88,
        code: "K7QMZ".to_owned(),
        catalogue_id: 7,
        status: status.to_owned(),
        items,
        subtotal_minor: 3_600_000,
        currency: "TZS".to_owned(),
        note: None,
        category: Some("Coffee".to_owned()),
        conversation_id: Some(5531),
        customer: Some("+255712345678".to_owned()),
        message_id: Some("msg_01JDS0K7QMZ4V8XH3N2B6C9T1R".to_owned()),
        order_id: (status == "ordered").then_some(1042),
        url: "https://svc.example/basket/3f9c2a7e51d04b8c9a1e6f0d2b7c4e58".to_owned(),
        expires_at: SAMPLE_AT + crate::baskets::EXPIRE_AFTER,
        submitted_at: (status == "ordered").then_some(SAMPLE_AT + time::Duration::minutes(12)),
        created_at: SAMPLE_AT,
        updated_at: SAMPLE_AT,
    }
}

fn sample_product() -> Product {
    Product {
        id: 2201,
        catalogue_id: 7,
        sku: "DUKA-00012".to_owned(),
        retailer_id: "DUKA-00012".to_owned(),
        name: "Kahawa ya Kilimanjaro 500g".to_owned(),
        price: 1_800_000,
        sale_price: None,
        description: Some("Arabica from the slopes of Kilimanjaro, medium roast.".to_owned()),
        currency: "TZS".to_owned(),
        image_url: Some("https://duka.example/img/kahawa-500.jpg".to_owned()),
        inventory: Some(12),
        reserved: 8,
        available: Some(4),
        availability: "in stock".to_owned(),
        availability_source: "derived".to_owned(),
        brand: Some("Kilimanjaro Estates".to_owned()),
        category: Some("Coffee".to_owned()),
        listings: Vec::new(),
        sync_status: None,
        created_at: SAMPLE_AT,
        updated_at: SAMPLE_AT,
    }
}

/// `(event, payload)` for every event commerce emits.
pub fn samples() -> Vec<(&'static str, Value)> {
    let report = Report::sample();
    vec![
        ("order.received", order_payload(&sample_order(OrderStatus::Pending, [2, 1]), None)),
        (
            "order.status_changed",
            order_payload(&sample_order(OrderStatus::Confirmed, [2, 1]), Some(OrderStatus::Pending.as_str())),
        ),
        (
            "order.cancelled",
            order_payload(&sample_order(OrderStatus::Cancelled, [0, 0]), Some(OrderStatus::Pending.as_str())),
        ),
        ("sync.completed", sync_completed(&report)),
        ("cart.submitted", cart_submitted(&sample_basket("ordered"), &sample_order(OrderStatus::Pending, [2, 1]))),
        ("cart.abandoned", cart_abandoned(&sample_basket("abandoned"))),
        ("stock.low", stock_low(7, &sample_product(), 5)),
        (
            "product.blocked",
            product_blocked(
                7,
                &sample_product(),
                "chat",
                "The item was rejected: it does not comply with the Commerce Policies (prohibited content).",
            ),
        ),
        (
            "product.drifted",
            product_drifted(
                7,
                &sample_product(),
                "chat",
                &[crate::drift::Difference {
                    field: "price".to_owned(),
                    local: json!(1_800_000),
                    platform: json!(1_750_000),
                }],
                "api",
            ),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deprecated_amounts_are_in_main_units_of_the_currency() {
        assert_eq!(main_units(1_800_000, "TZS"), json!(18_000));
        assert_eq!(main_units(150_050, "TZS"), json!(1_500.5));
        assert_eq!(main_units(1_500, "UGX"), json!(1_500));
    }

    #[test]
    fn order_payloads_carry_the_order_and_the_deprecated_duplicates() {
        let payload = order_payload(&sample_order(OrderStatus::Confirmed, [2, 1]), Some("pending"));
        assert_eq!(payload["previous_status"], "pending");
        assert_eq!(payload["order"]["stock_policy"], "svc");
        assert_eq!(payload["order_id"], 1042);
        assert_eq!(payload["customer_chat_id"], "255712345678");
        assert_eq!(payload["total_amount"], json!(42_500));
        assert_eq!(
            payload["product_items"][0],
            json!({
                "product_retailer_id": "DUKA-00012", "quantity": 2, "item_price": 18_000, "currency": "TZS"
            })
        );
        assert!(order_payload(&sample_order(OrderStatus::Pending, [2, 1]), None).get("previous_status").is_none());
    }

    #[test]
    fn sync_completed_leaves_out_the_problems() {
        let mut report = Report::sample();
        report.problems = Some(Vec::new());
        let payload = sync_completed(&report);
        assert_eq!(payload["catalogue_id"], 7);
        assert!(payload["sync"].get("problems").is_none());
        assert_eq!(payload["sync"]["status"], "completed");
    }
}
