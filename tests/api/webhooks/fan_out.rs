//! From an event to its deliveries (contract: Events, Delivery): one delivery per subscribed
//! receiver of the event's tenant, lead filters choosing the receivers, no delivery for a
//! rolled-back event and one as soon as an event commits, and the bound on attempts in flight
//! per receiver.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::TestApp;
use diesel::sql_types::BigInt;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::support::*;

/// `POST /webhooks` with filters, 201 expected: the receiver's id.
async fn register_filtered<S, B>(app: &TestApp<S>, key: &str, url: &str, events: &[&str], filters: Value) -> i64
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.post(WEBHOOKS, key, json!({"url": url, "events": events, "filters": filters})).await;
    assert_eq!(res.status, 201, "{}", res.body);
    res.data()["id"].as_i64().expect("id")
}

/// The lead ids a receiver got, sorted.
async fn lead_ids(receiver: &Receiver) -> Vec<String> {
    let mut ids: Vec<String> = receiver.bodies().await.iter().map(|b| str_of(&b["lead"], "id").to_owned()).collect();
    ids.sort();
    ids
}

async fn count(pool: &store::Pool, sql: &str, tenant: kernel::TenantId) -> i64 {
    use diesel_async::RunQueryDsl;
    let mut conn = store::connect_system(pool).await.expect("connection");
    let row: Count = diesel::sql_query(sql)
        .bind::<BigInt, _>(tenant.0)
        .get_result(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    row.n
}

#[actix_web::test]
async fn every_subscribed_receiver_of_the_tenant_gets_its_own_delivery_of_an_event() {
    // Proves the fan-out: one delivery per subscribed receiver of the event's tenant, one event
    // id across them and a delivery id each; no delivery to the unsubscribed or another tenant.
    let app = api_tests::spawn().await;
    let acme = app.account(MANAGER).await;
    let other = app.account(MANAGER).await;
    let (one, two, unsubscribed, foreign) = (
        Receiver::answering(200).await,
        Receiver::answering(200).await,
        Receiver::answering(200).await,
        Receiver::answering(200).await,
    );
    register(&app, &acme.key, &one.url(), &["lead.created"]).await;
    register(&app, &acme.key, &two.url(), &["lead.created", "lead.updated"]).await;
    register(&app, &acme.key, &unsubscribed.url(), &["lead.updated", "message.sent"]).await;
    register(&app, &other.key, &foreign.url(), &["lead.created"]).await;
    let event_id = emit(&app, acme.tenant, "lead.created", new_lead()).await;

    app.run_jobs().await;

    let (one, two) = (one.requests().await, two.requests().await);
    assert_eq!((one.len(), two.len()), (1, 1));
    assert_eq!(header(&one[0], "x-event-id"), event_id.to_string());
    assert_eq!(header(&two[0], "x-event-id"), event_id.to_string());
    assert_ne!(header(&one[0], "x-delivery-id"), header(&two[0], "x-delivery-id"));
    assert!(unsubscribed.requests().await.is_empty(), "not subscribed");
    assert!(foreign.requests().await.is_empty(), "another tenant's receiver");
}

#[actix_web::test]
async fn lead_filters_choose_which_receivers_get_a_lead_event() {
    // Proves the lead filters: stages, labels (by name, any case) and channels (the lead's
    // source channel) each narrow, together they all must match, empty means any, and they
    // leave other events alone.
    let app = api_tests::spawn().await;
    let acme = app.account(MANAGER).await;
    let receivers = [
        Receiver::answering(200).await,
        Receiver::answering(200).await,
        Receiver::answering(200).await,
        Receiver::answering(200).await,
        Receiver::answering(200).await,
        Receiver::answering(200).await,
    ];
    let [won, vip, whatsapp, any, empty, won_vip] = &receivers;
    let events = ["lead.created", "lead.stage_changed", "message.sent"];
    register_filtered(&app, &acme.key, &won.url(), &events, json!({"stages": ["won"]})).await;
    register_filtered(&app, &acme.key, &vip.url(), &events, json!({"labels": ["vip"]})).await;
    register_filtered(&app, &acme.key, &whatsapp.url(), &events, json!({"channels": ["whatsapp"]})).await;
    register_filtered(&app, &acme.key, &any.url(), &events, json!({})).await;
    let no_lists = json!({"stages": [], "labels": [], "channels": []});
    register_filtered(&app, &acme.key, &empty.url(), &events, no_lists).await;
    register_filtered(&app, &acme.key, &won_vip.url(), &events, json!({"stages": ["won"], "labels": ["VIP"]})).await;

    let (plain, p) = lead("new", &[], "sms");
    let (all, a) = lead("won", &["VIP"], "whatsapp");
    let (won_other, w) = lead("won", &["Other"], "sms");
    let (vip_new, v) = lead("new", &["Repeat", "vIp"], "web");
    let (from_whatsapp, c) = lead("qualified", &[], "whatsapp");
    emit(&app, acme.tenant, "lead.created", p).await;
    emit(&app, acme.tenant, "lead.stage_changed", a).await;
    emit(&app, acme.tenant, "lead.created", w).await;
    emit(&app, acme.tenant, "lead.created", v).await;
    emit(&app, acme.tenant, "lead.created", c).await;
    app.run_jobs().await;

    let everything = [&plain, &all, &won_other, &vip_new, &from_whatsapp];
    assert_eq!(lead_ids(won).await, sorted(&[&all, &won_other]), "stages");
    assert_eq!(lead_ids(vip).await, sorted(&[&all, &vip_new]), "labels, any case");
    assert_eq!(lead_ids(whatsapp).await, sorted(&[&all, &from_whatsapp]), "channels");
    assert_eq!(lead_ids(any).await, sorted(&everything), "{{}} is any");
    assert_eq!(lead_ids(empty).await, sorted(&everything), "empty lists are any");
    assert_eq!(lead_ids(won_vip).await, sorted(&[&all]), "every list must match");

    // not a lead event: the filters do not apply
    emit(&app, acme.tenant, "message.sent", message_sent(1)).await;
    app.run_jobs().await;
    for receiver in &receivers {
        let last = receiver.bodies().await.pop().expect("a body");
        assert_eq!(last["event"], "message.sent", "{last}");
    }
}

#[actix_web::test]
async fn an_event_rolled_back_is_never_delivered_and_a_committed_one_has_its_delivery_at_once() {
    // Proves the fan-out lives in the event's transaction: no delivery without a committed
    // event, and a delivery row as soon as one commits, before any worker runs.
    let app = api_tests::spawn().await;
    let acme = app.account(MANAGER).await;
    let receiver = Receiver::answering(200).await;
    register(&app, &acme.key, &receiver.url(), &["lead.created"]).await;
    let deliveries_sql = "SELECT count(*) AS n FROM webhook_deliveries WHERE tenant_id = $1";
    let events_sql = "SELECT count(*) AS n FROM events WHERE tenant_id = $1";

    let mut conn = app.conn().await;
    let now = app.clock.now();
    let rolled_back = diesel_async::AsyncConnection::transaction::<(), kernel::Error, _>(&mut *conn, async |conn| {
        store::outbox::emit(conn, acme.tenant, "lead.created", new_lead(), now).await?;
        Err(kernel::Error::internal("the domain change failed"))
    })
    .await;
    drop(conn);
    assert!(rolled_back.is_err());
    assert_eq!(count(&app.pool, events_sql, acme.tenant).await, 0);
    assert_eq!(count(&app.pool, deliveries_sql, acme.tenant).await, 0, "no delivery for a rolled-back event");
    app.run_jobs().await;
    assert!(receiver.requests().await.is_empty());

    let event_id = emit(&app, acme.tenant, "lead.created", new_lead()).await;
    assert_eq!(count(&app.pool, deliveries_sql, acme.tenant).await, 1, "the delivery exists before any worker runs");
    app.run_jobs().await;
    let requests = receiver.requests().await;
    assert_eq!(requests.len(), 1);
    assert_eq!(header(&requests[0], "x-event-id"), event_id.to_string());
}

/// A receiver that holds every request for a while before answering 200, and counts how many
/// it holds at once (a plain HTTP/1.1 listener: wiremock's responders cannot see when an
/// answer is finished).
struct SlowReceiver {
    url: String,
    received: Arc<AtomicUsize>,
    most_at_once: Arc<AtomicUsize>,
}

impl SlowReceiver {
    async fn start(hold: std::time::Duration) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}/hooks/in", listener.local_addr().expect("addr"));
        let received = Arc::new(AtomicUsize::new(0));
        let most_at_once = Arc::new(AtomicUsize::new(0));
        let in_flight = Arc::new(AtomicUsize::new(0));
        let (r, m) = (received.clone(), most_at_once.clone());
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let (received, most_at_once, in_flight) = (r.clone(), m.clone(), in_flight.clone());
                tokio::spawn(async move {
                    if read_request(&mut stream).await.is_none() {
                        return;
                    }
                    let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                    most_at_once.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(hold).await;
                    in_flight.fetch_sub(1, Ordering::SeqCst);
                    received.fetch_add(1, Ordering::SeqCst);
                    let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
                    let _ = stream.write_all(answer).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        Self { url, received, most_at_once }
    }
}

/// Reads one request's head and body; None when the connection ends first.
async fn read_request(stream: &mut tokio::net::TcpStream) -> Option<()> {
    let mut buf = Vec::new();
    let mut chunk = [0_u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + length {
                return Some(());
            }
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

#[actix_web::test]
async fn a_slow_receiver_never_has_more_attempts_in_flight_than_its_bound() {
    // Proves the per-receiver bound: with two per receiver, a slow receiver holds at most two
    // attempts at once while the fast one gets everything in the same run.
    let config = webhooks::WebhooksConfig { per_receiver: 2, concurrency: 8, ..api_tests::webhooks_config() };
    let app = api_tests::spawn_with_webhooks(config).await;
    let acme = app.account(MANAGER).await;
    let slow = SlowReceiver::start(std::time::Duration::from_millis(300)).await;
    let fast = Receiver::answering(200).await;
    let (slow_id, _) = register(&app, &acme.key, &slow.url, &["lead.created"]).await;
    let (fast_id, _) = register(&app, &acme.key, &fast.url(), &["lead.updated"]).await;
    for _ in 0..6 {
        emit(&app, acme.tenant, "lead.created", new_lead()).await;
        emit(&app, acme.tenant, "lead.updated", new_lead()).await;
    }

    app.run_jobs().await;

    assert_eq!(fast.requests().await.len(), 6);
    assert_eq!(slow.received.load(Ordering::SeqCst), 6);
    assert_eq!(slow.most_at_once.load(Ordering::SeqCst), 2, "two at a time, never more");
    assert_eq!(log(&app, &acme.key, slow_id, "?state=delivered").await["pagination"]["total"], 6);
    assert_eq!(log(&app, &acme.key, fast_id, "?state=delivered").await["pagination"]["total"], 6);
}
