//! Reservations (contract: Order status; Inventory level and movement; docs/api.md "Stock"):
//! an order holds stock from its creation, status moves commit or release the hold under the
//! order's own stock policy, a pending hold lapses after the shop's TTL on the worker's clock,
//! backorder shops hold beyond stock, and concurrent orders never hold more than is there.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{TestApp, join_all, json, spawn};
use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime};

use super::support::*;

async fn product<S, B>(app: &TestApp<S>, key: &str, shop: i64, sku: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&sku_path(shop, sku), key).await;
    assert_status(&res, 200);
    res.data().clone()
}

/// The newest movement of a product.
async fn last_movement<S, B>(app: &TestApp<S>, key: &str, shop: i64, sku: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&format!("{}/movements", sku_path(shop, sku)), key).await;
    assert_status(&res, 200);
    res.data()["items"][0].clone()
}

/// (inventory, reserved, available) of a product or a movement.
fn figures(v: &Value) -> (Option<i64>, Option<i64>, Option<i64>) {
    (v["inventory"].as_i64(), v["reserved"].as_i64(), v["available"].as_i64())
}

/// (kind, quantity) of a movement.
fn kind_quantity(m: &Value) -> (Option<&str>, Option<i64>) {
    (m["kind"].as_str(), m["quantity"].as_i64())
}

fn time_of(value: &Value, field: &str) -> OffsetDateTime {
    let raw = value[field].as_str().unwrap_or_else(|| panic!("{field} in {value}"));
    OffsetDateTime::parse(raw, &Rfc3339).unwrap_or_else(|e| panic!("{field} {raw}: {e}"))
}

async fn shop_with<S, B>(app: &TestApp<S>, key: &str, settings: Value) -> i64
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let mut body = json!({"name": "Duka Letu"});
    for (k, v) in settings.as_object().expect("settings") {
        body[k] = v.clone();
    }
    id_of(&create_shop(app, key, body).await)
}

#[actix_web::test]
async fn creating_an_order_holds_its_units() {
    // Proves the hold at creation: the line's `reserved`, the product's reserved and available
    // (on hand untouched), `reservation {state: held, expires_at}` at the shop's TTL (48 h by
    // default), and a `reserve` movement.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "svc").await;
    stocked(&app, &acme.key, shop, "A", 1000, json!(10)).await;

    let placed = order(&app, &acme.key, shop, json!([{"sku": "A", "quantity": 3}])).await;
    let line = &placed["lines"][0];
    assert_eq!(
        (&line["reserved"], &line["stock_short"], &line["unresolved"]),
        (&json!(3), &json!(false), &json!(false))
    );
    assert_eq!(placed["needs_attention"], false);
    assert_eq!(placed["reservation"]["state"], "held", "{placed}");
    assert_eq!(time_of(&placed["reservation"], "expires_at"), app.clock.now() + Duration::hours(48));
    assert_eq!(figures(&product(&app, &acme.key, shop, "A").await), (Some(10), Some(3), Some(7)));
    let m = last_movement(&app, &acme.key, shop, "A").await;
    assert_eq!(kind_quantity(&m), (Some("reserve"), Some(-3)), "{m}");
}

#[actix_web::test]
async fn a_line_held_only_in_part_is_stock_short_and_needs_attention() {
    // Proves the partial hold: what is available is held, the line says how much, the order
    // needs attention; the next order for the product holds nothing.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "svc").await;
    stocked(&app, &acme.key, shop, "A", 1000, json!(2)).await;
    stocked(&app, &acme.key, shop, "B", 500, json!(9)).await;

    let placed = order(&app, &acme.key, shop, json!([{"sku": "A", "quantity": 5}, {"sku": "B", "quantity": 1}])).await;
    let (a, b) = (&placed["lines"][0], &placed["lines"][1]);
    assert_eq!((&a["reserved"], &a["stock_short"]), (&json!(2), &json!(true)), "{a}");
    assert_eq!((&b["reserved"], &b["stock_short"]), (&json!(1), &json!(false)), "{b}");
    assert_eq!(placed["needs_attention"], true);
    assert_eq!(placed["total_minor"], 5 * 1000 + 500, "the total prices what was ordered");
    assert_eq!(figures(&product(&app, &acme.key, shop, "A").await), (Some(2), Some(2), Some(0)));

    let next = order(&app, &acme.key, shop, json!([{"sku": "A", "quantity": 1}])).await;
    assert_eq!((&next["lines"][0]["reserved"], &next["lines"][0]["stock_short"]), (&json!(0), &json!(true)));
    assert_eq!(next["needs_attention"], true);
    assert_eq!(figures(&product(&app, &acme.key, shop, "A").await), (Some(2), Some(2), Some(0)));
}

#[actix_web::test]
async fn an_unknown_code_is_kept_as_an_unresolved_line_outside_the_total() {
    // Proves the unresolved line (name, prices and currency null, nothing held), the total of
    // the resolved lines only, and `needs_attention`; an untracked product holds the whole line.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "svc").await;
    stocked(&app, &acme.key, shop, "A", 1200, json!(10)).await;
    stocked(&app, &acme.key, shop, "U", 300, Value::Null).await;

    let placed = order(
        &app,
        &acme.key,
        shop,
        json!([{"sku": "A", "quantity": 2}, {"sku": "NOPE", "quantity": 4}, {"sku": "U", "quantity": 4}]),
    )
    .await;
    let ghost = &placed["lines"][1];
    assert_eq!(ghost["sku"], "NOPE");
    assert_eq!(ghost["quantity"], 4);
    assert_eq!(ghost["unresolved"], true, "{ghost}");
    assert_eq!(ghost["reserved"], 0, "{ghost}");
    for field in ["name", "unit_price_minor", "line_total_minor", "currency"] {
        assert_eq!(ghost[field], Value::Null, "{field} of {ghost}");
    }
    assert_eq!(placed["total_minor"], 2 * 1200 + 4 * 300, "{placed}");
    assert_eq!(placed["needs_attention"], true);
    let untracked = &placed["lines"][2];
    assert_eq!((&untracked["reserved"], &untracked["stock_short"]), (&json!(4), &json!(false)), "{untracked}");
    assert_eq!(placed["lines"][0]["unresolved"], false);
}

#[actix_web::test]
async fn under_svc_confirming_commits_the_hold_and_cancelling_puts_the_units_back() {
    // Proves policy `svc`: confirmed decrements on hand and ends the hold (`commit` -n), later
    // states change nothing more, cancelled after a commit puts the units back (`release` +n).
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "svc").await;
    stocked(&app, &acme.key, shop, "A", 1000, json!(10)).await;
    let id = id_of(&order(&app, &acme.key, shop, json!([{"sku": "A", "quantity": 3}])).await);

    let confirmed = set_status(&app, &acme.key, id, "confirmed").await;
    assert_eq!(confirmed["reservation"]["state"], "committed", "{confirmed}");
    assert_eq!(figures(&product(&app, &acme.key, shop, "A").await), (Some(7), Some(0), Some(7)));
    let commit = last_movement(&app, &acme.key, shop, "A").await;
    assert_eq!(kind_quantity(&commit), (Some("commit"), Some(-3)), "{commit}");
    assert_eq!(figures(&commit), (Some(7), Some(0), Some(7)), "{commit}");
    assert_eq!(commit["order_id"], id);

    set_status(&app, &acme.key, id, "shipped").await;
    assert_eq!(figures(&product(&app, &acme.key, shop, "A").await), (Some(7), Some(0), Some(7)), "no second commit");
    assert_eq!(last_movement(&app, &acme.key, shop, "A").await["id"], commit["id"], "no movement for shipped");

    let cancelled = set_status(&app, &acme.key, id, "cancelled").await;
    assert_eq!(cancelled["reservation"]["state"], "released");
    assert_eq!(cancelled["lines"][0]["reserved"], 0);
    assert_eq!(figures(&product(&app, &acme.key, shop, "A").await), (Some(10), Some(0), Some(10)));
    let release = last_movement(&app, &acme.key, shop, "A").await;
    assert_eq!(kind_quantity(&release), (Some("release"), Some(3)), "{release}");
    assert_eq!(figures(&release), (Some(10), Some(0), Some(10)), "{release}");
    assert_eq!(release["cause"], format!("order {id} cancelled"));
}

#[actix_web::test]
async fn under_external_confirming_only_ends_the_hold() {
    // Proves policy `external`: the outside system owns the count, so confirmed leaves on hand
    // as it was and only ends the hold (`commit` -n, figures unchanged on hand).
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    stocked(&app, &acme.key, shop, "A", 1000, json!(10)).await;
    let placed = order(&app, &acme.key, shop, json!([{"sku": "A", "quantity": 3}])).await;
    assert_eq!(placed["stock_policy"], "external");
    assert_eq!(figures(&product(&app, &acme.key, shop, "A").await), (Some(10), Some(3), Some(7)));

    let confirmed = set_status(&app, &acme.key, id_of(&placed), "confirmed").await;
    assert_eq!(confirmed["reservation"]["state"], "committed", "{confirmed}");
    assert_eq!(figures(&product(&app, &acme.key, shop, "A").await), (Some(10), Some(0), Some(10)));
    let commit = last_movement(&app, &acme.key, shop, "A").await;
    assert_eq!(kind_quantity(&commit), (Some("commit"), Some(-3)), "{commit}");
    assert_eq!(figures(&commit), (Some(10), Some(0), Some(10)), "{commit}");
}

#[actix_web::test]
async fn cancelling_or_refunding_a_pending_order_releases_its_hold() {
    for policy in ["svc", "external"] {
        let app = spawn().await;
        let acme = app.account(MANAGER).await;
        let shop = shop(&app, &acme.key, policy).await;
        stocked(&app, &acme.key, shop, "A", 1000, json!(10)).await;
        let one = id_of(&order(&app, &acme.key, shop, json!([{"sku": "A", "quantity": 3}])).await);
        let two = id_of(&order(&app, &acme.key, shop, json!([{"sku": "A", "quantity": 4}])).await);
        assert_eq!(figures(&product(&app, &acme.key, shop, "A").await), (Some(10), Some(7), Some(3)), "{policy}");

        let cancelled = set_status(&app, &acme.key, one, "cancelled").await;
        assert_eq!(
            (&cancelled["reservation"]["state"], &cancelled["lines"][0]["reserved"]),
            (&json!("released"), &json!(0))
        );
        assert_eq!(figures(&product(&app, &acme.key, shop, "A").await), (Some(10), Some(4), Some(6)), "{policy}");
        let m = last_movement(&app, &acme.key, shop, "A").await;
        assert_eq!(kind_quantity(&m), (Some("release"), Some(3)), "{policy}: {m}");

        let refunded = set_status(&app, &acme.key, two, "refunded").await;
        assert_eq!(
            (&refunded["reservation"]["state"], &refunded["lines"][0]["reserved"]),
            (&json!("released"), &json!(0))
        );
        assert_eq!(figures(&product(&app, &acme.key, shop, "A").await), (Some(10), Some(0), Some(10)), "{policy}");
        let m = last_movement(&app, &acme.key, shop, "A").await;
        assert_eq!(kind_quantity(&m), (Some("release"), Some(4)), "{policy}: {m}");
    }
}

#[actix_web::test]
async fn a_released_order_moved_back_to_pending_holds_again_what_is_available() {
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "svc").await;
    stocked(&app, &acme.key, shop, "A", 1000, json!(3)).await;
    let first = id_of(&order(&app, &acme.key, shop, json!([{"sku": "A", "quantity": 3}])).await);
    set_status(&app, &acme.key, first, "cancelled").await;
    order(&app, &acme.key, shop, json!([{"sku": "A", "quantity": 2}])).await;

    let back = set_status(&app, &acme.key, first, "pending").await;
    assert_eq!(back["reservation"]["state"], "held", "{back}");
    assert_eq!((&back["lines"][0]["reserved"], &back["lines"][0]["stock_short"]), (&json!(1), &json!(true)), "{back}");
    assert_eq!(back["needs_attention"], true);
    assert_eq!(figures(&product(&app, &acme.key, shop, "A").await), (Some(3), Some(3), Some(0)));
}

#[actix_web::test]
async fn an_order_keeps_the_stock_policy_and_ttl_of_its_creation() {
    // Proves that PATCHing the shop leaves existing orders as they were made: an order made
    // under `svc` still decrements on hand after the shop moved to `external`, one made after
    // does not; a TTL raised afterwards does not extend the first order's hold.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop_with(&app, &acme.key, json!({"stock_policy": "svc", "reservation_ttl_hours": 2})).await;
    stocked(&app, &acme.key, shop, "A", 1000, json!(10)).await;
    stocked(&app, &acme.key, shop, "B", 1000, json!(10)).await;
    let old = order(&app, &acme.key, shop, json!([{"sku": "A", "quantity": 3}])).await;
    let lapsing = id_of(&order(&app, &acme.key, shop, json!([{"sku": "B", "quantity": 2}])).await);
    assert_eq!(old["stock_policy"], "svc");

    let res =
        app.patch(&shop_path(shop), &acme.key, json!({"stock_policy": "external", "reservation_ttl_hours": 100})).await;
    assert_status(&res, 200);
    let new = order(&app, &acme.key, shop, json!([{"sku": "A", "quantity": 2}])).await;
    assert_eq!(new["stock_policy"], "external");
    assert_eq!(time_of(&new["reservation"], "expires_at"), app.clock.now() + Duration::hours(100));
    assert_eq!(figures(&product(&app, &acme.key, shop, "A").await), (Some(10), Some(5), Some(5)));

    let confirmed = set_status(&app, &acme.key, id_of(&old), "confirmed").await;
    assert_eq!(confirmed["stock_policy"], "svc", "the order keeps its policy");
    assert_eq!(figures(&product(&app, &acme.key, shop, "A").await), (Some(7), Some(2), Some(5)), "svc commit");
    set_status(&app, &acme.key, id_of(&new), "confirmed").await;
    assert_eq!(figures(&product(&app, &acme.key, shop, "A").await), (Some(7), Some(0), Some(7)), "external commit");

    app.advance(Duration::hours(2) + Duration::minutes(1)).await;
    let lapsed = read_order(&app, &acme.key, lapsing).await;
    assert_eq!(lapsed["reservation"]["state"], "released", "the 2 h TTL of its creation: {lapsed}");
    assert_eq!(figures(&product(&app, &acme.key, shop, "B").await), (Some(10), Some(0), Some(10)));
}

#[actix_web::test]
async fn a_pending_hold_lapses_after_the_shops_ttl() {
    // Proves expiry on the worker's clock: nothing before the TTL, then the hold is released
    // (status still pending, `reservation.state` released, line and product reserved 0, a
    // `release` movement `order N hold expired`), no status event; a confirmed order is kept.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop_with(&app, &acme.key, json!({"stock_policy": "svc", "reservation_ttl_hours": 2})).await;
    stocked(&app, &acme.key, shop, "A", 1000, json!(10)).await;
    let placed = order(&app, &acme.key, shop, json!([{"sku": "A", "quantity": 3}])).await;
    let id = id_of(&placed);
    assert_eq!(time_of(&placed["reservation"], "expires_at"), app.clock.now() + Duration::hours(2));
    let kept = id_of(&order(&app, &acme.key, shop, json!([{"sku": "A", "quantity": 4}])).await);
    set_status(&app, &acme.key, kept, "confirmed").await;
    assert_eq!(figures(&product(&app, &acme.key, shop, "A").await), (Some(6), Some(3), Some(3)));

    app.advance(Duration::hours(1) + Duration::minutes(59)).await;
    let early = read_order(&app, &acme.key, id).await;
    assert_eq!((&early["reservation"]["state"], &early["lines"][0]["reserved"]), (&json!("held"), &json!(3)));
    assert_eq!(figures(&product(&app, &acme.key, shop, "A").await), (Some(6), Some(3), Some(3)), "not yet");

    app.advance(Duration::minutes(2)).await;
    let lapsed = read_order(&app, &acme.key, id).await;
    assert_eq!(lapsed["status"], "pending", "{lapsed}");
    assert_eq!(lapsed["reservation"]["state"], "released", "{lapsed}");
    assert_eq!(lapsed["lines"][0]["reserved"], 0, "{lapsed}");
    assert_eq!(figures(&product(&app, &acme.key, shop, "A").await), (Some(6), Some(0), Some(6)));
    let m = last_movement(&app, &acme.key, shop, "A").await;
    assert_eq!(kind_quantity(&m), (Some("release"), Some(3)), "{m}");
    assert_eq!(m["cause"], format!("order {id} hold expired"));
    assert_eq!(read_order(&app, &acme.key, kept).await["reservation"]["state"], "committed");
    let changes = events(&app, acme.tenant, "order.status_changed").await;
    assert_eq!(changes.len(), 1, "only the confirmation, not the expiry: {changes:?}");
}

#[actix_web::test]
async fn a_backorder_shop_holds_beyond_stock() {
    // Proves `allow_backorder`: the whole quantity is held, nothing is short, available goes
    // below zero and the product stays `in stock`.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop_with(&app, &acme.key, json!({"stock_policy": "svc", "allow_backorder": true})).await;
    stocked(&app, &acme.key, shop, "A", 1000, json!(2)).await;

    let placed = order(&app, &acme.key, shop, json!([{"sku": "A", "quantity": 5}])).await;
    assert_eq!((&placed["lines"][0]["reserved"], &placed["lines"][0]["stock_short"]), (&json!(5), &json!(false)));
    assert_eq!(placed["needs_attention"], false);
    order(&app, &acme.key, shop, json!([{"sku": "A", "quantity": 1}])).await;
    let a = product(&app, &acme.key, shop, "A").await;
    assert_eq!(figures(&a), (Some(2), Some(6), Some(-4)), "{a}");
    assert_eq!(a["availability"], "in stock");
}

/// The units held per order, and the short orders, of a race's answers (all 201).
fn tally(answers: &[(u16, Value)], sku: &str) -> (i64, usize) {
    let mut held = 0;
    let mut short = 0;
    for (status, body) in answers {
        assert_eq!(*status, 201, "every racing order is taken: {body}");
        let line = body["data"]["lines"]
            .as_array()
            .and_then(|lines| lines.iter().find(|l| l["sku"] == sku))
            .unwrap_or_else(|| panic!("{sku} line in {body}"));
        let reserved = line["reserved"].as_i64().unwrap_or_else(|| panic!("reserved in {line}"));
        assert!(reserved == 0 || reserved == 1, "{line}");
        assert_eq!(line["stock_short"], reserved == 0, "{line}");
        held += reserved;
        short += usize::from(reserved == 0);
    }
    (held, short)
}

#[actix_web::test]
async fn concurrent_orders_for_the_last_units_never_hold_more_than_is_there() {
    // The oversell race, in process: 24 one-unit orders for a product with 5 units, all in
    // flight at once over the pool's connections. Exactly 5 units are held, the rest short.
    let app = spawn().await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "svc").await;
    stocked(&app, &acme.key, shop, "A", 1000, json!(5)).await;

    let path = format!("{CATALOGUES}/{shop}/orders");
    let racing: Vec<_> = (0..24)
        .map(|i| {
            let body = json!({"platform": "manual", "customer_handle": format!("25571200{i:04}"), "lines": [{"sku": "A", "quantity": 1}]});
            app.post(&path, &acme.key, body)
        })
        .collect();
    let answers: Vec<(u16, Value)> = join_all(racing).await.into_iter().map(|r| (r.status, r.body)).collect();

    let (held, short) = tally(&answers, "A");
    assert_eq!(held, 5, "exactly the 5 units are held");
    assert_eq!(short, 19);
    assert_eq!(figures(&product(&app, &acme.key, shop, "A").await), (Some(5), Some(5), Some(0)));
    let res = app.get(&format!("{}/movements", sku_path(shop, "A")), &acme.key).await;
    let reserved: i64 = res.data()["items"]
        .as_array()
        .expect("movements")
        .iter()
        .filter(|m| m["kind"] == "reserve")
        .map(|m| m["quantity"].as_i64().unwrap_or(0))
        .sum();
    assert_eq!(reserved, -5, "the trail holds 5 units in all");
}

mod over_http {
    //! The race again through a real multi-threaded HTTP server, each order on its own TCP
    //! connection, so requests run in parallel on the server's workers and database connections.

    use super::*;
    use actix_web::{HttpServer, web};
    use gateway::AppState;
    use gateway::http::rate_limit::{MemoryLimiter, RateLimiter};
    use std::net::SocketAddr;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// One POST on a fresh connection: status and JSON body.
    async fn post(addr: SocketAddr, path: &str, key: &str, body: &Value) -> (u16, Value) {
        let body = body.to_string();
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).await.expect("write head");
        stream.write_all(body.as_bytes()).await.expect("write body");
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.expect("read");
        let end = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("end of head");
        let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
        let status: u16 = head.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("status");
        let mut payload = raw[end + 4..].to_vec();
        if head.contains("transfer-encoding: chunked") {
            payload = dechunk(&payload);
        }
        (status, serde_json::from_slice(&payload).unwrap_or(Value::Null))
    }

    fn dechunk(mut raw: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        while let Some(eol) = raw.windows(2).position(|w| w == b"\r\n") {
            let size = usize::from_str_radix(String::from_utf8_lossy(&raw[..eol]).trim(), 16).expect("chunk size");
            if size == 0 {
                break;
            }
            out.extend_from_slice(&raw[eol + 2..eol + 2 + size]);
            raw = &raw[eol + 4 + size..];
        }
        out
    }

    #[actix_web::test]
    async fn parallel_orders_over_many_connections_never_hold_more_than_is_there() {
        // 32 orders at once on 4 server workers with 16 database connections; half name the two
        // products A then B, half B then A (holds must not deadlock). Each product has 5 units:
        // exactly 5 of each are held, every order is taken.
        let app = spawn().await;
        let acme = app.account(MANAGER).await;
        let shop = shop(&app, &acme.key, "svc").await;
        stocked(&app, &acme.key, shop, "A", 1000, json!(5)).await;
        stocked(&app, &acme.key, shop, "B", 700, json!(5)).await;

        let pool = store::pool(app.db.url(), 16).expect("pool");
        let state = web::Data::new(
            AppState::new(
                pool.clone(),
                app.clock.clone(),
                RateLimiter::Memory(MemoryLimiter::new(10_000)),
                app.services_on(pool).await,
            )
            .expect("state"),
        );
        let server = HttpServer::new(move || gateway::app(state.clone(), gateway::config::HttpLimits::default()))
            .workers(4)
            .disable_signals()
            .shutdown_timeout(1)
            .bind(("127.0.0.1", 0))
            .expect("bind");
        let addr = server.addrs()[0];
        let server = server.run();
        let handle = server.handle();
        let _server = actix_web::rt::spawn(server);

        let path = format!("{CATALOGUES}/{shop}/orders");
        let racing: Vec<_> = (0..32)
            .map(|i| {
                let lines = if i % 2 == 0 {
                    json!([{"sku": "A", "quantity": 1}, {"sku": "B", "quantity": 1}])
                } else {
                    json!([{"sku": "B", "quantity": 1}, {"sku": "A", "quantity": 1}])
                };
                let body =
                    json!({"platform": "storefront", "customer_handle": format!("2557130{i:05}"), "lines": lines});
                let (path, key) = (path.clone(), acme.key.clone());
                tokio::spawn(async move { post(addr, &path, &key, &body).await })
            })
            .collect();
        let answers: Vec<(u16, Value)> = join_all(racing).await.into_iter().map(|r| r.expect("request task")).collect();
        handle.stop(true).await;

        for sku in ["A", "B"] {
            let (held, short) = tally(&answers, sku);
            assert_eq!(held, 5, "exactly the 5 units of {sku} are held");
            assert_eq!(short, 27, "{sku}");
            assert_eq!(figures(&product(&app, &acme.key, shop, sku).await), (Some(5), Some(5), Some(0)), "{sku}");
        }
    }
}
