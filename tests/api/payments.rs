//! Payments (contract: Payment, Payment state, Payments (read only), `order.paid`; issue 20):
//! asked for an order by the operator or on the checkout page, settled by the sandbox provider
//! by the payer's number or by the provider's callback, refunded by the operator, kept in a
//! balanced ledger, and read through `GET /payments` and `GET /payments/{payment}` in their own
//! envelope.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::test::TestRequest;
use api_tests::{Account, Resp, TestApp, json, spawn};
use kernel::{Caller, TenantId};
use payments_read::Source;
use serde_json::Value;
use time::Duration;

use crate::commerce::support::{events, put_product, read_order, set_status, shop};

const PAYMENTS: &str = "/api/v3/payments";
/// Reads payments and manages shops (to make the orders paid for).
const CASHIER: &str = "payments.view,communications.catalogue.view,communications.catalogue.manage";

/// The sandbox settles after this long (its default, `SVC_SANDBOX_PAYMENT_DELAY_MS`).
const ANSWER: Duration = Duration::seconds(1);

fn operator(tenant: TenantId) -> Caller {
    Caller::operator(tenant, "255")
}

/// A shop selling `K-1` at 4,500.00 and an order of `quantity` of it: the order's id.
async fn order_of<S, B>(app: &TestApp<S>, key: &str, quantity: i64) -> i64
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let shop = shop(app, key, "external").await;
    put_product(app, key, shop, "K-1", json!({"name": "Kahawa 500g", "price": 450_000})).await;
    let order = crate::commerce::support::order(app, key, shop, json!([{"sku": "K-1", "quantity": quantity}])).await;
    order["id"].as_i64().unwrap_or_else(|| panic!("an order id: {order}"))
}

/// The operator asks for `order`'s money from `phone`: the payment.
async fn request<S>(app: &TestApp<S>, tenant: TenantId, order: i64, phone: Option<&str>) -> payments_read::Payment {
    app.payments
        .request_for_order(&operator(tenant), commerce::OrderId(order), phone, Source::Operator)
        .await
        .expect("a payment")
}

/// A payment paid by `phone` (a number the sandbox pays from): its reference.
async fn paid<S, B>(app: &TestApp<S>, account: &Account, quantity: i64) -> String
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let order = order_of(app, &account.key, quantity).await;
    let payment = request(app, account.tenant, order, Some("0712345678")).await;
    app.run_jobs().await;
    app.advance(ANSWER).await;
    let read = read(app, &account.key, &payment.reference).await;
    assert_eq!(read["state"], "paid", "{read}");
    payment.reference
}

/// `GET /payments/{payment}` expecting 200: `data`.
async fn read<S, B>(app: &TestApp<S>, key: &str, payment: &str) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&format!("{PAYMENTS}/{payment}"), key).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert!(res.body.get("status").is_none(), "no status member: {}", res.body);
    res.body["data"].clone()
}

/// `GET /payments?{query}` expecting 200: the references listed.
async fn listed<S, B>(app: &TestApp<S>, key: &str, query: &str) -> (Vec<String>, Value)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&format!("{PAYMENTS}?{query}"), key).await;
    assert_eq!(res.status, 200, "{query}: {}", res.body);
    assert!(res.body.get("status").is_none(), "no status member: {}", res.body);
    let references = res.body["data"]
        .as_array()
        .unwrap_or_else(|| panic!("a list: {}", res.body))
        .iter()
        .map(|p| p["reference"].as_str().unwrap_or_default().to_owned())
        .collect();
    (references, res.body["meta"].clone())
}

/// A refusal in the payments' envelope: `{error:{code, message, retryable}, message, code}`.
#[track_caller]
fn assert_refusal(res: &Resp, status: u16, code: &str) {
    assert_eq!(res.status, status, "{}", res.body);
    assert_eq!(
        (res.body["code"].as_str(), res.body["error"]["code"].as_str()),
        (Some(code), Some(code)),
        "{}",
        res.body
    );
    assert!(res.body.get("status").is_none(), "no status member: {}", res.body);
}

fn states(timeline: &Value) -> Vec<(Value, Value, Value)> {
    timeline
        .as_array()
        .unwrap_or_else(|| panic!("a timeline: {timeline}"))
        .iter()
        .map(|t| (t["old_state"].clone(), t["new_state"].clone(), t["source"].clone()))
        .collect()
}

#[actix_web::test]
async fn an_order_paid_from_the_payers_phone_settles_once_into_the_ledger_with_order_paid() {
    let app = spawn().await;
    let acme = app.account(CASHIER).await;
    let order = order_of(&app, &acme.key, 2).await;

    let payment = request(&app, acme.tenant, order, Some("0712 345 678")).await;
    assert_eq!((payment.state, payment.amount_minor), ("pending", 900_000));
    assert_eq!(payment.amount, "TZS 9,000.00");
    assert_eq!((payment.payer.as_deref(), payment.attempts), (Some("+255712345678"), 1));
    assert!(payment.reference.starts_with("PAY-") && payment.reference.len() > 14, "{}", payment.reference);
    assert_eq!(read_order(&app, &acme.key, order).await["payment_status"], "pending");
    // the prompt goes out from a job, after the request's own transaction
    app.run_jobs().await;
    let pushes = app.payment_sandbox().pushes();
    assert_eq!(pushes.len(), 1);
    assert_eq!((pushes[0].phone.as_str(), pushes[0].amount_minor), ("+255712345678", 900_000));
    let pending = read(&app, &acme.key, &payment.reference).await;
    assert_eq!(pending["state"], "pending");
    assert_eq!(pending["is_open"], true);
    assert_eq!(pending["next_states"], json!(["authorised", "paid", "failed", "expired", "cancelled"]));

    app.advance(ANSWER).await;
    let paid = read(&app, &acme.key, &payment.id.to_string()).await;
    assert_eq!(paid["state"], "paid", "{paid}");
    assert_eq!((paid["is_open"].as_bool(), paid["is_settled"].as_bool()), (Some(false), Some(true)));
    assert_eq!(paid["refundable_minor"], 900_000);
    assert_eq!(paid["refunded"], Value::Null);
    assert!(paid["provider_receipt"].as_str().is_some_and(|r| r.len() == 10), "{paid}");
    assert_eq!(paid["settled_at"], paid["updated_at"]);
    assert_eq!(paid["created_by"]["kind"], "operator");
    assert_eq!(
        states(&paid["timeline"]),
        [
            (Value::Null, json!("draft"), json!("operator")),
            (json!("draft"), json!("pending"), json!("operator")),
            (json!("pending"), json!("paid"), json!("provider")),
        ]
    );
    let ledger = paid["ledger"].as_array().expect("a ledger");
    let sides: Vec<_> =
        ledger.iter().map(|e| (e["direction"].clone(), e["account"].clone(), e["amount_minor"].clone())).collect();
    assert_eq!(
        sides,
        [
            (json!("debit"), json!("provider_clearing"), json!(900_000)),
            (json!("credit"), json!("customer_payments"), json!(900_000)),
        ]
    );
    assert!(ledger[0]["entry_no"].as_i64() < ledger[1]["entry_no"].as_i64());
    assert_eq!(read_order(&app, &acme.key, order).await["payment_status"], "paid");

    let events_paid = events(&app, acme.tenant, "order.paid").await;
    assert_eq!(events_paid.len(), 1);
    let event = &events_paid[0];
    assert_eq!(event["order_id"], order);
    assert_eq!(event["payment_id"], json!(payment.id));
    assert_eq!((event["method"].as_str(), event["currency"].as_str()), (Some("mobile_money"), Some("TZS")));
    assert_eq!((event["amount_minor"].as_i64(), event["payer_msisdn"].as_str()), (Some(900_000), Some("255712345678")));
    assert_eq!(event["paid_at"], paid["settled_at"]);
    assert_eq!(event["conversation_id"], Value::Null);

    // the provider's callback for the same request, once more: nothing moves twice
    let token = callback_token(&app, &payment.reference).await;
    let body = stk_callback(&pushes[0].checkout_request_id, 0, Some(9_000));
    let res = app.send(TestRequest::post().uri(&format!("/hooks/payments/{token}")).set_json(&body)).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.body["ResultCode"], 0);
    app.run_jobs().await;
    assert_eq!(events(&app, acme.tenant, "order.paid").await.len(), 1, "order.paid once per settlement");
    assert_eq!(read(&app, &acme.key, &payment.reference).await["ledger"].as_array().map(Vec::len), Some(2));

    // a paid order is asked for nothing more
    let again = app
        .payments
        .request_for_order(&operator(acme.tenant), commerce::OrderId(order), None, Source::Operator)
        .await
        .expect_err("paid already");
    assert!(again.is(kernel::ErrorKind::Conflict), "{again:?}");
}

/// M-Pesa's result callback body (`Body.stkCallback`).
fn stk_callback(checkout_request_id: &str, code: i64, amount_major: Option<i64>) -> Value {
    let mut callback = json!({
        "MerchantRequestID": "29115-34620561-1",
        "CheckoutRequestID": checkout_request_id,
        "ResultCode": code,
        "ResultDesc": if code == 0 { "The service request is processed successfully." } else { "Request cancelled by user" },
    });
    if let Some(amount) = amount_major {
        callback["CallbackMetadata"] = json!({"Item": [
            {"Name": "Amount", "Value": amount},
            {"Name": "MpesaReceiptNumber", "Value": "NLJ7RT61SV"},
            {"Name": "TransactionDate", "Value": 20261207102115_i64},
            {"Name": "PhoneNumber", "Value": 255712345678_i64},
        ]});
    }
    json!({"Body": {"stkCallback": callback}})
}

/// The payment's callback secret, as the provider would have it from the push's URL.
async fn callback_token<S>(app: &TestApp<S>, reference: &str) -> String {
    let rows = api_tests::sql_rows(
        &app.pool,
        &format!("SELECT callback_token AS token FROM payments WHERE reference = '{reference}'"),
    )
    .await;
    rows[0]["token"].as_str().expect("a token").to_owned()
}

#[actix_web::test]
async fn the_sandbox_answers_by_the_payers_number_and_a_failed_payment_may_be_tried_again() {
    let app = spawn().await;
    let acme = app.account(CASHIER).await;
    let cases =
        [("0712340001", "failed", "insufficient"), ("0712340003", "cancelled", "1032"), ("0712345678", "paid", "")];
    let mut references = Vec::new();
    for (phone, _, _) in cases {
        let order = order_of(&app, &acme.key, 1).await;
        references.push((order, request(&app, acme.tenant, order, Some(phone)).await.reference));
    }
    let silent_order = order_of(&app, &acme.key, 1).await;
    let silent = request(&app, acme.tenant, silent_order, Some("0712340002")).await;
    app.run_jobs().await;
    app.advance(ANSWER).await;
    for ((phone, state, error), (order, reference)) in cases.iter().zip(&references) {
        let payment = read(&app, &acme.key, reference).await;
        assert_eq!(payment["state"], *state, "{phone}: {payment}");
        if !error.is_empty() {
            let last_error = payment["last_error"].as_str().unwrap_or_default().to_lowercase();
            assert!(last_error.contains(error), "{phone}: {payment}");
        }
        let status = if *state == "paid" { "paid" } else { "unpaid" };
        assert_eq!(read_order(&app, &acme.key, *order).await["payment_status"], status, "{phone}");
    }
    // 0002 never answers: the payment waits, then expires when its prompt lapses
    assert_eq!(read(&app, &acme.key, &silent.reference).await["state"], "pending");
    app.advance(Duration::seconds(170)).await;
    assert_eq!(read(&app, &acme.key, &silent.reference).await["state"], "pending", "not before its time");
    app.advance(Duration::seconds(10)).await;
    let expired = read(&app, &acme.key, &silent.reference).await;
    assert_eq!(expired["state"], "expired", "{expired}");
    assert_eq!(expired["next_states"], json!([]));
    assert_eq!(states(&expired["timeline"]).last().map(|t| t.2.clone()), Some(json!("expiry")));

    // the failed one is tried again from another number: failed -> pending -> paid
    let (failed_order, failed) = &references[0];
    let again = request(&app, acme.tenant, *failed_order, Some("0712349999")).await;
    assert_eq!((again.reference.as_str(), again.state, again.attempts), (failed.as_str(), "pending", 2));
    app.run_jobs().await;
    app.advance(ANSWER).await;
    let paid = read(&app, &acme.key, failed).await;
    assert_eq!(paid["state"], "paid");
    assert_eq!(paid["last_error"], Value::Null, "settled: the old failure is gone");
    let moves = states(&paid["timeline"]);
    assert_eq!(
        moves.iter().map(|m| m.1.clone()).collect::<Vec<_>>(),
        json!(["draft", "pending", "failed", "pending", "paid"]).as_array().cloned().unwrap_or_default()
    );
    // a cancelled payment is final: its order gets a new one
    let (cancelled_order, cancelled) = &references[1];
    let fresh = request(&app, acme.tenant, *cancelled_order, None).await;
    assert_ne!(&fresh.reference, cancelled);
    assert_eq!(fresh.state, "draft");
    assert!(fresh.checkout_url.as_deref().is_some_and(|u| u.starts_with("http://127.0.0.1:8080/pay/")), "{fresh:?}");
}

#[actix_web::test]
async fn a_callback_is_taken_only_for_its_own_request_and_a_bad_one_is_refused() {
    let app = spawn().await;
    let acme = app.account(CASHIER).await;
    let order = order_of(&app, &acme.key, 1).await;
    // 0002: the sandbox never answers a query, so only the callback settles it
    let payment = request(&app, acme.tenant, order, Some("0712340002")).await;
    app.run_jobs().await;
    let token = callback_token(&app, &payment.reference).await;
    let path = format!("/hooks/payments/{token}");
    let post = |path: String, body: Value| app.send(TestRequest::post().uri(&path).set_json(body));

    let res = post(format!("/hooks/payments/{}", "0".repeat(32)), stk_callback("ws_CO_x", 0, Some(4_500))).await;
    assert_eq!(res.status, 404, "an unknown token: {}", res.body);
    let res = post(path.clone(), stk_callback("ws_CO_another", 0, Some(4_500))).await;
    assert_eq!(res.status, 422, "another request's result: {}", res.body);
    let res = post(path.clone(), json!({"Body": {}})).await;
    assert_eq!(res.status, 422, "not a callback: {}", res.body);
    let request_id = app.payment_sandbox().pushes()[0].checkout_request_id.clone();
    let res = post(path.clone(), stk_callback(&request_id, 0, Some(4_000))).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let short = read(&app, &acme.key, &payment.reference).await;
    assert_eq!(short["state"], "pending", "not what was asked: the operator decides");
    assert!(short["last_error"].as_str().is_some_and(|e| e.contains("400000")), "{short}");
    assert!(events(&app, acme.tenant, "order.paid").await.is_empty());

    let res = post(path.clone(), stk_callback(&request_id, 0, Some(4_500))).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let paid = read(&app, &acme.key, &payment.reference).await;
    assert_eq!((paid["state"].as_str(), paid["provider_receipt"].as_str()), (Some("paid"), Some("NLJ7RT61SV")));
    // a late cancellation of a settled payment changes nothing
    let res = post(path, stk_callback(&request_id, 1032, None)).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(read(&app, &acme.key, &payment.reference).await["state"], "paid");
    assert_eq!(events(&app, acme.tenant, "order.paid").await.len(), 1);
}

#[actix_web::test]
async fn the_list_reads_every_state_filter_form_the_subject_and_pages_newest_first() {
    let app = spawn().await;
    let acme = app.account(CASHIER).await;
    let paid_ref = paid(&app, &acme, 1).await;
    let failed_order = order_of(&app, &acme.key, 1).await;
    let failed = request(&app, acme.tenant, failed_order, Some("0712340001")).await.reference;
    app.run_jobs().await;
    app.advance(ANSWER).await;
    let draft_order = order_of(&app, &acme.key, 3).await;
    let draft = request(&app, acme.tenant, draft_order, None).await.reference;

    let all = vec![draft.clone(), failed.clone(), paid_ref.clone()];
    let (refs, meta) = listed(&app, &acme.key, "").await;
    assert_eq!(refs, all, "newest first, everything when omitted");
    assert_eq!(meta, json!({"current_page": 1, "per_page": 25, "total": 3, "last_page": 1}));
    assert_eq!(listed(&app, &acme.key, "state=open").await.0, vec![draft.clone()]);
    assert_eq!(listed(&app, &acme.key, "state=%20PAID%20").await.0, vec![paid_ref.clone()], "trimmed, lowercased");
    assert_eq!(listed(&app, &acme.key, "state=failed").await.0, vec![failed.clone()]);
    assert_eq!(listed(&app, &acme.key, "state=all").await.0, all);
    assert_eq!(listed(&app, &acme.key, "state=bogus").await.0, all, "unrecognized: unfiltered");
    assert_eq!(listed(&app, &acme.key, &format!("subject_id={draft_order}")).await.0, vec![draft.clone()]);
    assert_eq!(listed(&app, &acme.key, &format!("subject_id={draft_order}&state=paid")).await.0, Vec::<String>::new());

    let (refs, meta) = listed(&app, &acme.key, "per_page=2&page=2").await;
    assert_eq!(refs, vec![paid_ref.clone()]);
    assert_eq!(meta, json!({"current_page": 2, "per_page": 2, "total": 3, "last_page": 2}));
    let (refs, meta) = listed(&app, &acme.key, "per_page=2&limit=1").await;
    assert_eq!((refs, meta["per_page"].clone()), (vec![draft.clone()], json!(1)), "limit overrides per_page");
    assert_eq!(listed(&app, &acme.key, "per_page=500").await.1["per_page"], 100, "capped at 100");
    assert_refusal(&app.get(&format!("{PAYMENTS}?page=x"), &acme.key).await, 422, "validation_error");

    // by reference, in any case, and by id
    let by_ref = read(&app, &acme.key, &paid_ref.to_lowercase()).await;
    assert_eq!(by_ref["reference"], paid_ref);
    assert_eq!(read(&app, &acme.key, by_ref["id"].as_str().unwrap_or_default()).await["reference"], paid_ref);
    for missing in ["PAY-20000101-999999", "PAY-1", "nothing", "00000000-0000-0000-0000-000000000000"] {
        assert_refusal(&app.get(&format!("{PAYMENTS}/{missing}"), &acme.key).await, 404, "not_found");
    }
}

#[actix_web::test]
async fn reads_need_payments_view_from_a_known_active_issuer_and_another_tenants_payments_are_404() {
    let app = spawn().await;
    let acme = app.account(CASHIER).await;
    let reference = paid(&app, &acme, 1).await;
    let id = read(&app, &acme.key, &reference).await["id"].as_str().unwrap_or_default().to_owned();
    let paths = [PAYMENTS.to_owned(), format!("{PAYMENTS}/{reference}")];

    // another tenant sees none of it
    let other = app.account(CASHIER).await;
    assert_eq!(listed(&app, &other.key, "").await.0, Vec::<String>::new());
    for key in [reference.as_str(), id.as_str()] {
        assert_refusal(&app.get(&format!("{PAYMENTS}/{key}"), &other.key).await, 404, "not_found");
    }

    // no payments.view
    let user = app.user(acme.tenant, "communications.catalogue.view").await;
    let without = app.key(acme.tenant, user).await;
    for path in &paths {
        assert_refusal(&app.get(path, &without).await, 403, "permission_denied");
    }
    // a legacy key (no recorded issuer), then a deactivated issuer
    let legacy = app.legacy_key(acme.tenant).await;
    for path in &paths {
        assert_eq!(app.get(path, &legacy).await.status, 403, "{path}");
    }
    {
        let mut conn = app.conn().await;
        accounts::users::deactivate(&mut conn, acme.user).await.expect("deactivate");
    }
    for path in &paths {
        assert_refusal(&app.get(path, &acme.key).await, 403, "permission_denied");
    }
    // there is no write route
    let res = app.post(PAYMENTS, &other.key, json!({"amount_minor": 100})).await;
    assert_eq!(res.status, 405, "{}", res.body);
}

#[actix_web::test]
async fn concurrent_refunds_never_give_back_more_than_was_paid_and_the_ledger_balances() {
    let app = spawn().await;
    let acme = app.account(CASHIER).await;
    // 2 x 4,500.00 = 9,000.00
    let reference = paid(&app, &acme, 2).await;

    // five refunds of 2,000.00 at once, each on its own connection: four fit
    let pool = store::pool_with(app.db.url(), 8, store::RowSecurity::On).expect("pool");
    let services = app.services_on(pool).await;
    let cashier = operator(acme.tenant);
    let refunds: Vec<_> =
        (0..5).map(|_| services.payments.refund(&cashier, &reference, 200_000, Some("damaged"))).collect();
    let outcomes = api_tests::join_all(refunds).await;
    let refused: Vec<_> = outcomes.iter().filter_map(|o| o.as_ref().err()).collect();
    let made: Vec<_> = outcomes.iter().filter_map(|o| o.as_ref().ok()).collect();
    assert_eq!((made.len(), refused.len()), (4, 1), "{outcomes:?}");
    assert!(refused[0].errors.contains_key("amount_minor"), "{:?}", refused[0]);
    assert!(made.iter().all(|r| r.state == "paid" && r.is_refund && r.refund_of.is_some()), "{made:?}");

    let payment = read(&app, &acme.key, &reference).await;
    assert_eq!(payment["state"], "partly_refunded");
    assert_eq!(
        (payment["refunded_minor"].as_i64(), payment["refundable_minor"].as_i64()),
        (Some(800_000), Some(100_000))
    );
    assert_eq!(payment["refunded"], "TZS 8,000.00");
    assert_eq!(payment["next_states"], json!(["partly_refunded", "refunded"]));
    let refunds = payment["refunds"].as_array().expect("refunds");
    assert_eq!(refunds.len(), 4);
    let created: Vec<&str> = refunds.iter().map(|r| r["created_at"].as_str().unwrap_or_default()).collect();
    assert!(created.windows(2).all(|w| w[0] >= w[1]), "newest first: {created:?}");
    let order = payment["subject_id"].as_str().unwrap_or_default().parse::<i64>().expect("an order");
    assert_eq!(read_order(&app, &acme.key, order).await["payment_status"], "partly_refunded");

    // more than what is left is refused; the rest brings it to refunded
    let over = app.payments.refund(&operator(acme.tenant), &reference, 100_001, None).await.expect_err("too much");
    assert!(over.is(kernel::ErrorKind::Validation), "{over:?}");
    let last = app.payments.refund(&operator(acme.tenant), &reference, 100_000, None).await.expect("the rest");
    assert_eq!(last.state, "paid");
    let payment = read(&app, &acme.key, &reference).await;
    assert_eq!((payment["state"].as_str(), payment["refundable_minor"].as_i64()), (Some("refunded"), Some(0)));
    assert_eq!(read_order(&app, &acme.key, order).await["payment_status"], "refunded");
    let refund_of_refund = app
        .payments
        .refund(&operator(acme.tenant), &last.reference, 1, None)
        .await
        .expect_err("a refund is not refunded");
    assert!(refund_of_refund.is(kernel::ErrorKind::Conflict), "{refund_of_refund:?}");
    // a refund's own read: its ledger gives the money back
    let refund = read(&app, &acme.key, &last.reference).await;
    assert_eq!((refund["is_refund"].as_bool(), refund["refund_of"].as_str()), (Some(true), payment["id"].as_str()));
    let sides: Vec<_> = refund["ledger"]
        .as_array()
        .expect("ledger")
        .iter()
        .map(|e| (e["direction"].clone(), e["account"].clone()))
        .collect();
    assert_eq!(sides, [(json!("debit"), json!("customer_payments")), (json!("credit"), json!("provider_clearing"))]);

    assert_ledger_balances(&app, acme.tenant, 0).await;
}

/// Every movement's debits equal its credits; so every account's debits less credits, summed
/// over the accounts, is zero; and what customers paid, net, is `expected_net`.
async fn assert_ledger_balances<S>(app: &TestApp<S>, tenant: TenantId, expected_net: i64) {
    let per_movement = api_tests::sql_rows(
        &app.pool,
        &format!(
            "SELECT payment_id::text AS payment, kind,
                    sum(CASE direction WHEN 'debit' THEN amount_minor ELSE -amount_minor END)::bigint AS net
             FROM ledger_entries WHERE tenant_id = {} GROUP BY payment_id, kind",
            tenant.0
        ),
    )
    .await;
    assert!(!per_movement.is_empty());
    assert!(per_movement.iter().all(|m| m["net"] == 0), "{per_movement:?}");
    let accounts = api_tests::sql_rows(
        &app.pool,
        &format!(
            "SELECT account, sum(CASE direction WHEN 'debit' THEN amount_minor ELSE -amount_minor END)::bigint AS balance
             FROM ledger_entries WHERE tenant_id = {} GROUP BY account ORDER BY account",
            tenant.0
        ),
    )
    .await;
    let total: i64 = accounts.iter().map(|a| a["balance"].as_i64().unwrap_or_default()).sum();
    assert_eq!(total, 0, "{accounts:?}");
    let net = accounts
        .iter()
        .find(|a| a["account"] == "provider_clearing")
        .map(|a| a["balance"].as_i64().unwrap_or_default());
    assert_eq!(net.unwrap_or_default(), expected_net, "{accounts:?}");
}

#[actix_web::test]
async fn a_run_of_random_payments_and_refunds_leaves_every_account_balanced() {
    let app = spawn().await;
    let acme = app.account(CASHIER).await;
    // a small deterministic generator: the same run every time
    let mut seed: u64 = 0x5eed_1234;
    let mut next = |bound: u64| {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 33) % bound
    };
    let endings = ["0001", "0003", "5678", "4321", "9876"];
    let mut orders = Vec::new();
    for _ in 0..8 {
        let order = order_of(&app, &acme.key, 1 + next(4) as i64).await;
        let phone = format!("071234{}", endings[next(endings.len() as u64) as usize]);
        orders.push((order, request(&app, acme.tenant, order, Some(&phone)).await.reference));
    }
    app.run_jobs().await;
    app.advance(ANSWER).await;
    let mut net = 0;
    for (_, reference) in &orders {
        let payment = read(&app, &acme.key, reference).await;
        if payment["state"] != "paid" {
            continue;
        }
        let mut left = payment["amount_minor"].as_i64().unwrap_or_default();
        for _ in 0..next(4) {
            let amount = 1 + next(left as u64 + 50_000) as i64;
            match app.payments.refund(&operator(acme.tenant), reference, amount, None).await {
                Ok(_) => left -= amount,
                Err(error) => {
                    assert!(amount > left && error.is(kernel::ErrorKind::Validation), "{amount} of {left}: {error:?}")
                }
            }
        }
        let payment = read(&app, &acme.key, reference).await;
        assert_eq!(payment["refundable_minor"].as_i64(), Some(left), "{payment}");
        let refunded: i64 = payment["refunds"]
            .as_array()
            .expect("refunds")
            .iter()
            .map(|r| r["amount_minor"].as_i64().unwrap_or_default())
            .sum();
        assert_eq!(payment["refunded_minor"].as_i64(), Some(refunded));
        net += left;
    }
    assert!(net > 0, "some money stayed");
    assert_ledger_balances(&app, acme.tenant, net).await;
}

#[actix_web::test]
async fn an_unpaid_order_can_still_be_cancelled_and_a_cancelled_order_is_not_asked_for_money() {
    let app = spawn().await;
    let acme = app.account(CASHIER).await;
    let order = order_of(&app, &acme.key, 1).await;
    set_status(&app, &acme.key, order, "cancelled").await;
    let refused = app
        .payments
        .request_for_order(&operator(acme.tenant), commerce::OrderId(order), Some("0712345678"), Source::Operator)
        .await
        .expect_err("cancelled");
    assert!(refused.is(kernel::ErrorKind::Conflict), "{refused:?}");
    let missing = app
        .payments
        .request_for_order(&operator(acme.tenant), commerce::OrderId(order + 1000), None, Source::Operator)
        .await
        .expect_err("no such order");
    assert!(missing.is(kernel::ErrorKind::NotFound), "{missing:?}");
    let other = app.account(CASHIER).await;
    let theirs = app
        .payments
        .request_for_order(&operator(other.tenant), commerce::OrderId(order), None, Source::Operator)
        .await
        .expect_err("another tenant's order");
    assert!(theirs.is(kernel::ErrorKind::NotFound), "{theirs:?}");
    assert_eq!(listed(&app, &acme.key, "").await.0, Vec::<String>::new());
}

#[actix_web::test]
async fn a_draft_checkout_link_lapses_after_a_day() {
    let app = spawn().await;
    let acme = app.account(CASHIER).await;
    let order = order_of(&app, &acme.key, 1).await;
    let draft = request(&app, acme.tenant, order, None).await;
    assert_eq!((draft.state, draft.attempts), ("draft", 0));
    assert_eq!(read_order(&app, &acme.key, order).await["payment_status"], "unpaid");
    app.advance(Duration::hours(23)).await;
    assert_eq!(read(&app, &acme.key, &draft.reference).await["state"], "draft");
    app.advance(Duration::hours(1)).await;
    let expired = read(&app, &acme.key, &draft.reference).await;
    assert_eq!(expired["state"], "expired", "{expired}");
    assert_eq!(expired["checkout_url"], Value::Null, "a link that can take no money is not shown");
}

#[actix_web::test]
async fn the_customer_pays_an_ordered_basket_from_its_checkout_page() {
    let app = spawn().await;
    let acme = app.account(&format!("{CASHIER},communications.send")).await;
    let shop = shop(&app, &acme.key, "external").await;
    put_product(&app, &acme.key, shop, "K-1", json!({"name": "Kahawa 500g", "price": 450_000})).await;
    let link = app.post("/api/v3/shop-links", &acme.key, json!({"items": [{"sku": "K-1", "quantity": 2}]})).await;
    assert_eq!(link.status, 201, "{}", link.body);
    let basket_path = link.data()["cart"]["url"].as_str().unwrap_or_default().replacen("http://127.0.0.1:8080", "", 1);
    let res = app.send(TestRequest::post().uri(&basket_path).set_form(vec![("qty:K-1", "2"), ("name", "Amina")])).await;
    assert_eq!(res.status, 303, "{}", res.body);

    // the ordered basket's page offers the pay step
    let page = app.send(TestRequest::get().uri(&basket_path)).await;
    let html = page.body.as_str().unwrap_or_default().to_owned();
    let pay_path = html
        .split("href=\"")
        .find_map(|rest| rest.strip_prefix("/pay/"))
        .and_then(|rest| rest.split('"').next())
        .map(|token| format!("/pay/{token}"))
        .unwrap_or_else(|| panic!("a pay link: {html}"));
    assert!(html.contains("Pay TZS 9,000.00 now"), "{html}");
    let checkout = app.send(TestRequest::get().uri(&pay_path)).await;
    assert_eq!(checkout.status, 200);
    let text = checkout.body.as_str().unwrap_or_default();
    assert!(text.contains("Amina, your payment") && text.contains("TZS 9,000.00"), "{text}");
    assert!(text.contains("name=\"phone\""), "{text}");

    let res = app.send(TestRequest::post().uri(&pay_path).set_form(vec![("phone", "not a number")])).await;
    assert_eq!(res.status, 422);
    assert!(res.body.as_str().is_some_and(|t| t.contains("role=\"alert\"")), "{}", res.body);
    let res = app.send(TestRequest::post().uri(&pay_path).set_form(vec![("phone", "0712 345 678")])).await;
    assert_eq!(res.status, 303, "{}", res.body);
    assert_eq!(res.header("location"), Some(pay_path.as_str()));
    let waiting = app.send(TestRequest::get().uri(&pay_path)).await;
    assert!(waiting.body.as_str().is_some_and(|t| t.contains("Approve it on your phone")), "{}", waiting.body);
    assert_eq!(waiting.header("refresh"), Some("3"), "the page follows the payment by itself");
    // asked again while waiting: refused, nothing sent twice
    let res = app.send(TestRequest::post().uri(&pay_path).set_form(vec![("phone", "0712345678")])).await;
    assert_eq!(res.status, 409);

    app.run_jobs().await;
    app.advance(ANSWER).await;
    let done = app.send(TestRequest::get().uri(&pay_path)).await;
    assert!(done.body.as_str().is_some_and(|t| t.contains("Paid. Thank you!")), "{}", done.body);
    assert_eq!(done.header("refresh"), None);
    let (refs, _) = listed(&app, &acme.key, "state=paid").await;
    assert_eq!(refs.len(), 1);
    let payment = read(&app, &acme.key, &refs[0]).await;
    assert_eq!(payment["created_by"]["kind"], "checkout");
    assert_eq!(states(&payment["timeline"])[1].2, "checkout");
    assert_eq!(app.payment_sandbox().pushes().len(), 1);
    // the basket page's pay step is gone once paid; an unknown checkout token is a 404 page
    let page = app.send(TestRequest::get().uri(&basket_path)).await;
    assert!(!page.body.as_str().unwrap_or_default().contains("/pay/"), "{}", page.body);
    assert_eq!(app.send(TestRequest::get().uri(&format!("/pay/{}", "a".repeat(32)))).await.status, 404);
}

#[actix_web::test]
async fn a_customer_pays_from_the_checkout_page_in_a_real_browser() {
    use fantoccini::Locator;

    let app = spawn().await;
    let server = app.listen();
    let acme = app.account(CASHIER).await;
    let order = order_of(&app, &acme.key, 2).await;
    let draft = request(&app, acme.tenant, order, None).await;
    let token = draft.checkout_token.clone().expect("a checkout token");

    let browser = api_tests::browser::Browser::start().await;
    browser.goto(&format!("{}/pay/{token}", server.url)).await.expect("open the checkout page");
    let heading = browser.wait().for_element(Locator::Css("h1")).await.expect("the page");
    assert_eq!(heading.text().await.expect("text"), "Amina Juma, your payment");
    let amount = browser.find(Locator::Id("amount")).await.expect("the amount").text().await.expect("text");
    assert_eq!(amount, "TZS 9,000.00");
    browser.find(Locator::Id("phone")).await.expect("the number").send_keys("0712 345 678").await.expect("type");
    browser
        .find(Locator::XPath("//button[starts-with(text(), 'Pay')]"))
        .await
        .expect("the button")
        .click()
        .await
        .expect("click");
    let status = browser.wait().for_element(Locator::Id("status")).await.expect("the status");
    assert!(status.text().await.expect("text").contains("Approve it on your phone"));

    // the payer approves; the page, reloading itself, shows the payment settled
    app.run_jobs().await;
    app.advance(ANSWER).await;
    let paid = browser
        .wait()
        .at_most(std::time::Duration::from_secs(15))
        .for_element(Locator::Css("p#status.done"))
        .await
        .expect("the page follows the payment to paid");
    let text = paid.text().await.expect("text");
    browser.close().await;
    let payment = read(&app, &acme.key, &draft.reference).await;
    assert_eq!(payment["state"], "paid");
    let receipt = payment["provider_receipt"].as_str().unwrap_or_default();
    assert_eq!(text, format!("Paid. Thank you! Receipt {receipt}."));
    assert_eq!(payment["payer"], "+255712345678");
}
