//! Feeds (contract: Sync run and feed; Catalogues, products, stock, orders; Limits: feed disabled
//! after 10 failed pulls; docs/api.md "Feeds"): a merchant's CSV or JSON product file, served here
//! by a fake on this machine's loopback, pulled at once when the feed is made and then on its
//! schedule into sync runs of kind `feed`; the mapping and price rules, `replace` and `upsert`,
//! failed pulls and the switch-off after ten, the request checks and the address guard,
//! permissions and isolation.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{TestApp, json, spawn};
use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::support::*;
use crate::framework::assert_error;

fn feeds_path(shop: i64) -> String {
    format!("{CATALOGUES}/{shop}/feeds")
}

fn feed_path(shop: i64, feed: i64) -> String {
    format!("{CATALOGUES}/{shop}/feeds/{feed}")
}

fn run_path(shop: i64, feed: i64) -> String {
    format!("{CATALOGUES}/{shop}/feeds/{feed}/run")
}

fn syncs_path(shop: i64) -> String {
    format!("{CATALOGUES}/{shop}/syncs")
}

fn sync_path(shop: i64, sync: i64) -> String {
    format!("{CATALOGUES}/{shop}/syncs/{sync}")
}

/// A Meta commerce-manager export: two good rows and one whose price is no price.
const META_CSV: &str = "id,title,price,availability,quantity_to_sell_on_facebook\n\
                        K-1,Kahawa 1kg,45000.00 TZS,in_stock,5\n\
                        K-2,Chai 500g,\"TZS 12,500.50\",out_of_stock,0\n\
                        K-3,Sukari,bei nafuu,in stock,3\n";

/// The fake's answer: `status` with `body` of `content_type` at `GET file`.
async fn serve(server: &MockServer, file: &str, status: u16, body: &str, content_type: &str) {
    Mock::given(method("GET"))
        .and(path(file))
        .respond_with(ResponseTemplate::new(status).set_body_raw(body.as_bytes().to_vec(), content_type))
        .mount(server)
        .await;
}

/// The file the fake serves at `file` from now on, in place of what it served before.
async fn serve_instead(server: &MockServer, file: &str, status: u16, body: &str, content_type: &str) {
    server.reset().await;
    serve(server, file, status, body, content_type).await;
}

/// The requests the fake received.
async fn pulls(server: &MockServer) -> usize {
    server.received_requests().await.expect("requests are recorded").len()
}

fn url(server: &MockServer, file: &str) -> String {
    format!("{}{file}", server.uri())
}

/// `POST .../feeds`, 201 expected: the feed.
async fn create_feed<S, B>(app: &TestApp<S>, key: &str, shop: i64, body: Value) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.post(&feeds_path(shop), key, body).await;
    assert_status(&res, 201);
    assert_eq!(res.body["status"], "success", "{}", res.body);
    res.data().clone()
}

/// `GET .../feeds/{feed}`, 200 expected: the feed.
async fn read_feed<S, B>(app: &TestApp<S>, key: &str, shop: i64, feed: i64) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&feed_path(shop, feed), key).await;
    assert_status(&res, 200);
    res.data().clone()
}

/// `POST .../feeds/{feed}/run`, 202 expected: the queued report.
async fn run_feed<S, B>(app: &TestApp<S>, key: &str, shop: i64, feed: i64) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.post(&run_path(shop, feed), key, json!({})).await;
    assert_status(&res, 202);
    assert_eq!(res.body["status"], "success", "{}", res.body);
    res.data().clone()
}

/// `GET .../syncs/{sync}`, 200 expected: the report.
async fn report<S, B>(app: &TestApp<S>, key: &str, shop: i64, sync: i64) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&sync_path(shop, sync), key).await;
    assert_status(&res, 200);
    res.data().clone()
}

/// `GET .../syncs`, 200 expected: the page.
async fn syncs<S, B>(app: &TestApp<S>, key: &str, shop: i64) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = app.get(&syncs_path(shop), key).await;
    assert_status(&res, 200);
    res.data().clone()
}

/// The report of the feed's newest pull (`last_sync_id`).
async fn last_run<S, B>(app: &TestApp<S>, key: &str, shop: i64, feed: i64) -> Value
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let sync = read_feed(app, key, shop, feed).await["last_sync_id"]
        .as_i64()
        .unwrap_or_else(|| panic!("the feed {feed} has a last_sync_id"));
    report(app, key, shop, sync).await
}

/// The report's counts, in one comparable value.
fn counts(report: &Value) -> Value {
    json!({
        "received": report["received"], "created": report["created"], "updated": report["updated"],
        "unchanged": report["unchanged"], "rejected": report["rejected"], "retired": report["retired"],
    })
}

#[track_caller]
fn time_of(value: &Value) -> OffsetDateTime {
    let text = value.as_str().unwrap_or_else(|| panic!("a time, got {value}"));
    OffsetDateTime::parse(text, &Rfc3339).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// A 422 whose field errors name `field`.
#[track_caller]
fn assert_field(res: &api_tests::Resp, field: &str) {
    assert_error(res, 422);
    assert!(res.body["errors"][field].as_array().is_some_and(|m| !m.is_empty()), "errors.{field} in {}", res.body);
}

#[actix_web::test]
async fn a_meta_csv_feed_is_pulled_at_once_into_a_feed_run_that_lands_its_products() {
    // Proves the feed's defaults (daily, replace, on, `last_sync_id` naming a queued run of kind
    // `feed`), the pull made by the job without waiting for the schedule, the Meta column names
    // (id, title, quantity_to_sell_on_facebook), a price with a currency code read as major
    // units with the code as currency (not the shop's USD), a bad row rejected at `ingest`, the
    // run listed with the shop's runs and `sync.completed`, and the next pull a day later.
    let app = spawn().await;
    let server = MockServer::start().await;
    serve(&server, "/meta.csv", 200, META_CSV, "text/csv").await;
    let acme = app.account(MANAGER).await;
    let shop = id_of(
        &create_shop(
            &app,
            &acme.key,
            json!({"name": "Duka Letu", "stock_policy": "external", "default_currency": "USD"}),
        )
        .await,
    );
    let made_at = app.clock.now();

    let feed = create_feed(&app, &acme.key, shop, json!({"url": url(&server, "/meta.csv")})).await;
    let id = id_of(&feed);
    let expected = [
        ("catalogue_id", json!(shop)),
        ("url", json!(url(&server, "/meta.csv"))),
        ("schedule", json!("daily")),
        ("mode", json!("replace")),
        ("mapping", json!({})),
        ("enabled", json!(true)),
        ("consecutive_failures", json!(0)),
        ("last_failure", Value::Null),
    ];
    for (field, value) in &expected {
        assert_eq!(&feed[*field], value, "{field} in {feed}");
    }
    let sync = feed["last_sync_id"].as_i64().unwrap_or_else(|| panic!("last_sync_id in {feed}"));
    let queued = report(&app, &acme.key, shop, sync).await;
    assert_eq!(
        (&queued["status"], &queued["kind"], &queued["feed_id"], &queued["mode"]),
        (&json!("queued"), &json!("feed"), &json!(id), &json!("replace")),
        "{queued}"
    );
    assert_eq!(pulls(&server).await, 0, "the pull is a job");

    assert!(app.run_jobs().await > 0, "the first pull is due at once");
    assert_eq!(pulls(&server).await, 1);
    let done = report(&app, &acme.key, shop, sync).await;
    assert_eq!((&done["status"], &done["kind"], &done["feed_id"]), (&json!("completed"), &json!("feed"), &json!(id)));
    assert_eq!(
        counts(&done),
        json!({"received": 3, "created": 2, "updated": 0, "unchanged": 0, "rejected": 1, "retired": 0})
    );
    let problems = done["problems"].as_array().unwrap_or_else(|| panic!("problems in {done}"));
    assert_eq!(problems.len(), 1, "{done}");
    assert_eq!((&problems[0]["sku"], &problems[0]["stage"]), (&json!("K-3"), &json!("ingest")), "{done}");
    assert!(problems[0]["reason"].as_str().is_some_and(|r| !r.is_empty()), "{done}");
    assert_eq!(done["failure"], Value::Null);

    let kahawa = app.get(&sku_path(shop, "K-1"), &acme.key).await;
    assert_status(&kahawa, 200);
    let kahawa = kahawa.data();
    assert_eq!(
        (&kahawa["name"], &kahawa["price"], &kahawa["currency"], &kahawa["inventory"], &kahawa["availability"]),
        (&json!("Kahawa 1kg"), &json!(4_500_000), &json!("TZS"), &json!(5), &json!("in stock")),
        "{kahawa}"
    );
    let chai = app.get(&sku_path(shop, "K-2"), &acme.key).await;
    assert_status(&chai, 200);
    assert_eq!(
        (&chai.data()["price"], &chai.data()["currency"], &chai.data()["availability"]),
        (&json!(1_250_050), &json!("TZS"), &json!("out of stock")),
        "{}",
        chai.body
    );
    assert_error(&app.get(&sku_path(shop, "K-3"), &acme.key).await, 404);

    let page = syncs(&app, &acme.key, shop).await;
    assert_eq!(page["pagination"]["total"], 1, "{page}");
    let listed = &page["items"][0];
    assert_eq!((id_of(listed), &listed["kind"], &listed["feed_id"]), (sync, &json!("feed"), &json!(id)), "{listed}");
    assert!(listed.get("problems").is_none(), "a list leaves out problems: {listed}");
    let completed = events(&app, acme.tenant, "sync.completed").await;
    assert_eq!(completed.len(), 1, "{completed:?}");
    assert_eq!((&completed[0]["sync"]["id"], &completed[0]["sync"]["kind"]), (&json!(sync), &json!("feed")));

    let pulled = read_feed(&app, &acme.key, shop, id).await;
    assert_eq!((&pulled["last_sync_id"], &pulled["consecutive_failures"]), (&json!(sync), &json!(0)), "{pulled}");
    assert_eq!(time_of(&pulled["last_pulled_at"]), made_at);
    assert_eq!(time_of(&pulled["next_pull_at"]), made_at + Duration::DAY, "daily");
    let res = app.get(&feeds_path(shop), &acme.key).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["pagination"]["total"], 1, "{}", res.body);
    assert_eq!(id_of(&res.data()["items"][0]), id);
}

#[actix_web::test]
async fn a_json_feed_is_read_through_its_mapping_and_replace_retires_what_the_file_drops() {
    // Proves a JSON file under `products`, a mapping read from its columns only (the same-name
    // members are ignored), a JSON integer price as minor units and a decimal one as major,
    // `POST .../run` answering 202 with a queued `feed` run that becomes `last_sync_id`, and a
    // second pull in `replace` mode retiring the product the file no longer lists.
    let app = spawn().await;
    let server = MockServer::start().await;
    let first = json!({"products": [
        {"code": "A-1", "label": "Kahawa", "amount": 1800, "sku": "WRONG", "name": "Wrong", "price": 1},
        {"code": "A-2", "label": "Chai", "amount": 12.5},
    ]});
    serve(&server, "/products", 200, &first.to_string(), "application/json").await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let mapping = json!({"sku": "code", "name": "label", "price": "amount"});
    let feed = create_feed(&app, &acme.key, shop, json!({"url": url(&server, "/products"), "mapping": mapping})).await;
    let id = id_of(&feed);
    assert_eq!(feed["mapping"], mapping, "{feed}");
    app.run_jobs().await;

    let done = last_run(&app, &acme.key, shop, id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        counts(&done),
        json!({"received": 2, "created": 2, "updated": 0, "unchanged": 0, "rejected": 0, "retired": 0})
    );
    let a = app.get(&sku_path(shop, "A-1"), &acme.key).await;
    assert_status(&a, 200);
    assert_eq!((&a.data()["name"], &a.data()["price"]), (&json!("Kahawa"), &json!(1800)), "{}", a.body);
    let b = app.get(&sku_path(shop, "A-2"), &acme.key).await;
    assert_status(&b, 200);
    assert_eq!((&b.data()["name"], &b.data()["price"]), (&json!("Chai"), &json!(1250)), "{}", b.body);
    assert_error(&app.get(&sku_path(shop, "WRONG"), &acme.key).await, 404);

    let second = json!({"products": [{"code": "A-1", "label": "Kahawa", "amount": 1900}]});
    serve_instead(&server, "/products", 200, &second.to_string(), "application/json").await;
    let queued = run_feed(&app, &acme.key, shop, id).await;
    assert_eq!(
        (&queued["status"], &queued["kind"], &queued["feed_id"], &queued["mode"]),
        (&json!("queued"), &json!("feed"), &json!(id), &json!("replace")),
        "{queued}"
    );
    assert_ne!(id_of(&queued), id_of(&done), "a new run");
    assert_eq!(read_feed(&app, &acme.key, shop, id).await["last_sync_id"], json!(id_of(&queued)));
    app.run_jobs().await;

    let done = report(&app, &acme.key, shop, id_of(&queued)).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        counts(&done),
        json!({"received": 1, "created": 0, "updated": 1, "unchanged": 0, "rejected": 0, "retired": 1})
    );
    assert_eq!(app.get(&sku_path(shop, "A-1"), &acme.key).await.data()["price"], 1900);
    assert_error(&app.get(&sku_path(shop, "A-2"), &acme.key).await, 404);
    assert_eq!(syncs(&app, &acme.key, shop).await["pagination"]["total"], 2);
}

#[actix_web::test]
async fn an_upsert_feed_leaves_the_products_its_file_drops() {
    // Proves `mode: upsert` on a feed: kept on the feed and its runs, and a second pull of a
    // shorter file retires nothing.
    let app = spawn().await;
    let server = MockServer::start().await;
    serve(&server, "/feed.csv", 200, "sku,name,price\nU-1,Kahawa,1800\nU-2,Chai,1250\n", "text/csv").await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let feed = create_feed(&app, &acme.key, shop, json!({"url": url(&server, "/feed.csv"), "mode": "upsert"})).await;
    let id = id_of(&feed);
    assert_eq!(feed["mode"], "upsert", "{feed}");
    app.run_jobs().await;
    let first = last_run(&app, &acme.key, shop, id).await;
    assert_eq!(
        (&first["status"], &first["mode"], &first["created"]),
        (&json!("completed"), &json!("upsert"), &json!(2))
    );

    serve_instead(&server, "/feed.csv", 200, "sku,name,price\nU-1,Kahawa,1900\n", "text/csv").await;
    let queued = run_feed(&app, &acme.key, shop, id).await;
    assert_eq!(queued["mode"], "upsert", "{queued}");
    app.run_jobs().await;
    let done = report(&app, &acme.key, shop, id_of(&queued)).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        counts(&done),
        json!({"received": 1, "created": 0, "updated": 1, "unchanged": 0, "rejected": 0, "retired": 0})
    );
    let kept = app.get(&sku_path(shop, "U-2"), &acme.key).await;
    assert_status(&kept, 200);
    assert_eq!(kept.data()["price"], 1250);
}

#[actix_web::test]
async fn ten_failed_pulls_in_a_row_switch_a_feed_off_and_a_good_pull_by_hand_switches_it_on() {
    // Proves a pull that cannot fetch the file fails its run with the reason and counts on the
    // feed; the feed stays on through nine failures and is switched off by the tenth (no next
    // pull, and its schedule no longer pulls it); a pull asked for by hand still runs, and one
    // that succeeds clears the count and switches the feed back on.
    let app = spawn().await;
    let server = MockServer::start().await;
    serve(&server, "/feed.csv", 500, "boom", "text/plain").await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let id = id_of(&create_feed(&app, &acme.key, shop, json!({"url": url(&server, "/feed.csv")})).await);
    app.run_jobs().await;

    let failed = last_run(&app, &acme.key, shop, id).await;
    assert_eq!((&failed["status"], &failed["kind"]), (&json!("failed"), &json!("feed")), "{failed}");
    let failure = failed["failure"].as_str().unwrap_or_else(|| panic!("failure in {failed}"));
    assert!(failure.contains("500"), "the reason names the answer: {failure}");
    let feed = read_feed(&app, &acme.key, shop, id).await;
    assert_eq!((&feed["consecutive_failures"], &feed["enabled"]), (&json!(1), &json!(true)), "{feed}");
    assert!(feed["last_failure"].as_str().is_some_and(|f| f.contains("500")), "{feed}");
    assert!(feed["next_pull_at"].is_string(), "still scheduled: {feed}");

    for failures in 2..=10 {
        let queued = run_feed(&app, &acme.key, shop, id).await;
        app.run_jobs().await;
        let run = report(&app, &acme.key, shop, id_of(&queued)).await;
        assert_eq!(run["status"], "failed", "pull {failures}: {run}");
        let feed = read_feed(&app, &acme.key, shop, id).await;
        assert_eq!(feed["consecutive_failures"], failures, "{feed}");
        assert_eq!(feed["enabled"], failures < 10, "pull {failures}: {feed}");
    }
    assert_eq!(pulls(&server).await, 10);
    let off = read_feed(&app, &acme.key, shop, id).await;
    assert_eq!((&off["enabled"], &off["next_pull_at"]), (&json!(false), &Value::Null), "{off}");
    assert!(off["last_failure"].is_string(), "{off}");

    // the daily pull queued before the feed went off does not pull it
    app.advance(Duration::DAY + Duration::HOUR).await;
    assert_eq!(pulls(&server).await, 10, "a feed that is off is not pulled on schedule");
    assert_eq!(syncs(&app, &acme.key, shop).await["pagination"]["total"], 10);

    serve_instead(&server, "/feed.csv", 200, "sku,name,price\nF-1,Kahawa,1800\n", "text/csv").await;
    let queued = run_feed(&app, &acme.key, shop, id).await;
    app.run_jobs().await;
    let done = report(&app, &acme.key, shop, id_of(&queued)).await;
    assert_eq!((&done["status"], &done["created"]), (&json!("completed"), &json!(1)), "{done}");
    let on = read_feed(&app, &acme.key, shop, id).await;
    assert_eq!(
        (&on["enabled"], &on["consecutive_failures"], &on["last_failure"]),
        (&json!(true), &json!(0), &Value::Null),
        "{on}"
    );
    assert_eq!(time_of(&on["next_pull_at"]), app.clock.now() + Duration::DAY, "scheduled again: {on}");
    assert_status(&app.get(&sku_path(shop, "F-1"), &acme.key).await, 200);
}

#[actix_web::test]
async fn an_hourly_feed_is_pulled_again_an_hour_later_and_a_manual_one_only_when_asked() {
    // Proves the schedules: `hourly` next pull an hour after the pull and the clock reaching it
    // pulling again into a new run; `manual` has no next pull and time never pulls it; `weekly`
    // is a week.
    let app = spawn().await;
    let server = MockServer::start().await;
    serve(&server, "/hourly.csv", 200, "sku,name,price\nH-1,Kahawa,1800\n", "text/csv").await;
    serve(&server, "/manual.csv", 200, "sku,name,price\nM-1,Chai,1200\n", "text/csv").await;
    serve(&server, "/weekly.csv", 200, "sku,name,price\nW-1,Sukari,900\n", "text/csv").await;
    let acme = app.account(MANAGER).await;
    let hourly_shop = shop(&app, &acme.key, "external").await;
    let manual_shop = shop(&app, &acme.key, "external").await;
    let weekly_shop = shop(&app, &acme.key, "external").await;
    let start = app.clock.now();

    let body = json!({"url": url(&server, "/hourly.csv"), "schedule": "hourly"});
    let hourly = id_of(&create_feed(&app, &acme.key, hourly_shop, body).await);
    let body = json!({"url": url(&server, "/manual.csv"), "schedule": "Manual"});
    let manual = create_feed(&app, &acme.key, manual_shop, body).await;
    assert_eq!(manual["schedule"], "manual", "{manual}");
    let manual = id_of(&manual);
    let body = json!({"url": url(&server, "/weekly.csv"), "schedule": "weekly"});
    let weekly = id_of(&create_feed(&app, &acme.key, weekly_shop, body).await);
    app.run_jobs().await;
    let requests_to = |file: &'static str| {
        let server = &server;
        async move {
            let requests = server.received_requests().await.expect("requests are recorded");
            requests.iter().filter(|r| r.url.path() == file).count()
        }
    };
    assert_eq!((requests_to("/hourly.csv").await, requests_to("/manual.csv").await), (1, 1));

    let feed = read_feed(&app, &acme.key, hourly_shop, hourly).await;
    assert_eq!(time_of(&feed["last_pulled_at"]), start);
    assert_eq!(time_of(&feed["next_pull_at"]), start + Duration::HOUR, "{feed}");
    let first = feed["last_sync_id"].clone();
    let feed = read_feed(&app, &acme.key, manual_shop, manual).await;
    assert_eq!((&feed["next_pull_at"], &feed["enabled"]), (&Value::Null, &json!(true)), "{feed}");
    assert_eq!(last_run(&app, &acme.key, manual_shop, manual).await["status"], "completed");
    let feed = read_feed(&app, &acme.key, weekly_shop, weekly).await;
    assert_eq!(time_of(&feed["next_pull_at"]), start + Duration::WEEK, "{feed}");

    app.advance(Duration::minutes(59)).await;
    assert_eq!(requests_to("/hourly.csv").await, 1, "not yet due");
    app.advance(Duration::minutes(1)).await;
    assert_eq!(requests_to("/hourly.csv").await, 2, "pulled on the hour");
    let page = syncs(&app, &acme.key, hourly_shop).await;
    assert_eq!(page["pagination"]["total"], 2, "{page}");
    let newest = &page["items"][0];
    assert_ne!(newest["id"], first);
    assert_eq!(
        (&newest["kind"], &newest["feed_id"], &newest["status"]),
        (&json!("feed"), &json!(hourly), &json!("completed")),
        "{newest}"
    );
    let feed = read_feed(&app, &acme.key, hourly_shop, hourly).await;
    assert_eq!(feed["last_sync_id"], newest["id"], "the scheduled run is the feed's newest");
    assert_eq!(time_of(&feed["last_pulled_at"]), start + Duration::HOUR);
    assert_eq!(time_of(&feed["next_pull_at"]), start + Duration::hours(2), "{feed}");
    app.advance(Duration::HOUR).await;
    assert_eq!(requests_to("/hourly.csv").await, 3, "and every hour after");

    app.advance(Duration::DAY * 8).await;
    assert_eq!(requests_to("/manual.csv").await, 1, "a manual feed is pulled only when asked");
    assert_eq!(syncs(&app, &acme.key, manual_shop).await["pagination"]["total"], 1);
    assert_eq!(requests_to("/weekly.csv").await, 2, "a week later");
    run_feed(&app, &acme.key, manual_shop, manual).await;
    app.run_jobs().await;
    assert_eq!(requests_to("/manual.csv").await, 2, "pulled when asked");
    assert_eq!(read_feed(&app, &acme.key, manual_shop, manual).await["next_pull_at"], Value::Null);
}

#[actix_web::test]
async fn a_pull_by_hand_moves_the_schedule_instead_of_adding_a_second_one() {
    // Proves the feed is pulled when its `next_pull_at` says: a pull asked for half an hour
    // into an hourly schedule sets the next pull an hour after it, and the pull that was due on
    // the old hour does not happen as well (else every pull by hand adds a schedule).
    let app = spawn().await;
    let server = MockServer::start().await;
    serve(&server, "/feed.csv", 200, "sku,name,price\nH-1,Kahawa,1800\n", "text/csv").await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let start = app.clock.now();
    let body = json!({"url": url(&server, "/feed.csv"), "schedule": "hourly"});
    let id = id_of(&create_feed(&app, &acme.key, shop, body).await);
    app.run_jobs().await;

    app.advance(Duration::minutes(30)).await;
    run_feed(&app, &acme.key, shop, id).await;
    app.run_jobs().await;
    assert_eq!(pulls(&server).await, 2);
    let feed = read_feed(&app, &acme.key, shop, id).await;
    let next = time_of(&feed["next_pull_at"]);
    assert_eq!(next, start + Duration::minutes(90), "an hour after the pull by hand: {feed}");

    app.advance(Duration::minutes(30)).await;
    assert_eq!(pulls(&server).await, 2, "no pull at {}, before next_pull_at {next}", app.clock.now());
    app.advance(Duration::minutes(30)).await;
    assert_eq!(pulls(&server).await, 3, "pulled at next_pull_at");
    // two more hours: one pull an hour, not two
    app.advance(Duration::minutes(30)).await;
    app.advance(Duration::minutes(30)).await;
    app.advance(Duration::minutes(30)).await;
    app.advance(Duration::minutes(30)).await;
    assert_eq!(pulls(&server).await, 5, "one schedule");
}

#[actix_web::test]
async fn a_feed_without_a_url_or_with_a_refused_url_schedule_mapping_or_mode_is_422_and_pulls_nothing() {
    // Proves the request checks (422 naming the member): a missing or over-long url, an address
    // the guard refuses (private, link-local, not http(s), credentials), an unknown schedule or
    // mode, a mapping naming a field that is not a product field or a column that is not a name;
    // none makes a feed or a run or reaches any server.
    let app = spawn().await;
    let server = MockServer::start().await;
    serve(&server, "/feed.csv", 200, "sku,name,price\nA,Kahawa,1800\n", "text/csv").await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let good = url(&server, "/feed.csv");
    let long = format!("{}?pad={}", good, "x".repeat(2_048));
    let with_credentials = good.replacen("http://", "http://user:secret@", 1);
    let cases = [
        (json!({"schedule": "daily"}), "url"),
        (json!({"url": "http://10.0.0.5/feed.csv"}), "url"),
        (json!({"url": "https://192.168.1.20/feed.csv"}), "url"),
        (json!({"url": "http://169.254.169.254/latest/meta-data"}), "url"),
        (json!({"url": "file:///etc/passwd"}), "url"),
        (json!({"url": "not a url"}), "url"),
        (json!({"url": long}), "url"),
        (json!({"url": with_credentials}), "url"),
        (json!({"url": good, "schedule": "monthly"}), "schedule"),
        (json!({"url": good, "mode": "merge"}), "mode"),
        (json!({"url": good, "mapping": {"sku": "id", "colour": "farbe"}}), "mapping"),
        (json!({"url": good, "mapping": {"price": 3}}), "mapping"),
        (json!({"url": good, "mapping": ["sku"]}), "mapping"),
    ];
    for (body, field) in cases {
        let res = app.post(&feeds_path(shop), &acme.key, body.clone()).await;
        assert_field(&res, field);
        if field == "mapping" && body["mapping"].get("colour").is_some() {
            let message = res.body["errors"]["mapping"][0].as_str().unwrap_or_default();
            assert!(message.contains("colour"), "the message names the field: {}", res.body);
        }
    }
    app.run_jobs().await;
    assert_eq!(pulls(&server).await, 0, "nothing was fetched");
    let res = app.get(&feeds_path(shop), &acme.key).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["pagination"]["total"], 0, "no feed made: {}", res.body);
    assert_eq!(syncs(&app, &acme.key, shop).await["pagination"]["total"], 0, "no run recorded");
}

#[actix_web::test]
async fn a_file_that_holds_no_products_fails_its_run_with_the_reason() {
    // Proves the whole-file errors of the reader reach the run: JSON without a product list, a
    // CSV header without rows; and a redirect is an answer, not followed (the guard checked the
    // first address only); each fails its run and counts on the feed, and nothing lands.
    let app = spawn().await;
    let server = MockServer::start().await;
    serve(&server, "/nope.json", 200, r#"{"nope":1}"#, "application/json").await;
    serve(&server, "/empty.csv", 200, "sku,name,price\n", "text/csv").await;
    serve(&server, "/feed.csv", 200, "sku,name,price\nA,Kahawa,1800\n", "text/csv").await;
    Mock::given(method("GET"))
        .and(path("/moved.csv"))
        .respond_with(ResponseTemplate::new(302).insert_header("Location", url(&server, "/feed.csv")))
        .mount(&server)
        .await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let json_feed = id_of(&create_feed(&app, &acme.key, shop, json!({"url": url(&server, "/nope.json")})).await);
    let csv_feed = id_of(&create_feed(&app, &acme.key, shop, json!({"url": url(&server, "/empty.csv")})).await);
    let moved = id_of(&create_feed(&app, &acme.key, shop, json!({"url": url(&server, "/moved.csv")})).await);
    app.run_jobs().await;

    let requests = server.received_requests().await.expect("requests are recorded");
    assert!(requests.iter().all(|r| r.url.path() != "/feed.csv"), "the redirect was not followed");
    for (feed, reason) in [(json_feed, "no list of products"), (csv_feed, "no products"), (moved, "302")] {
        let run = last_run(&app, &acme.key, shop, feed).await;
        assert_eq!((&run["status"], &run["kind"], &run["feed_id"]), (&json!("failed"), &json!("feed"), &json!(feed)));
        let failure = run["failure"].as_str().unwrap_or_else(|| panic!("failure in {run}"));
        assert!(failure.contains(reason), "{failure}");
        let read = read_feed(&app, &acme.key, shop, feed).await;
        assert_eq!((&read["consecutive_failures"], &read["enabled"]), (&json!(1), &json!(true)), "{read}");
        assert_eq!(read["last_failure"], json!(failure), "{read}");
    }
    let res = app.get(&format!("{CATALOGUES}/{shop}/products"), &acme.key).await;
    assert_eq!(res.data()["pagination"]["total"], 0, "{}", res.body);
}

#[actix_web::test]
async fn a_viewer_reads_feeds_but_cannot_make_or_run_one() {
    // Proves making and running a feed need manage (403, nothing pulled) while reading feeds
    // needs only view.
    let app = spawn().await;
    let server = MockServer::start().await;
    serve(&server, "/feed.csv", 200, "sku,name,price\nA,Kahawa,1800\n", "text/csv").await;
    let acme = app.account(MANAGER).await;
    let shop = shop(&app, &acme.key, "external").await;
    let id = id_of(&create_feed(&app, &acme.key, shop, json!({"url": url(&server, "/feed.csv")})).await);
    app.run_jobs().await;
    let viewer = app.user(acme.tenant, VIEWER).await;
    let viewer = app.key(acme.tenant, viewer).await;

    assert_error(&app.post(&feeds_path(shop), &viewer, json!({"url": url(&server, "/feed.csv")})).await, 403);
    assert_error(&app.post(&run_path(shop, id), &viewer, json!({})).await, 403);
    app.run_jobs().await;
    assert_eq!(pulls(&server).await, 1, "only the manager's feed was pulled");
    assert_eq!(id_of(&read_feed(&app, &viewer, shop, id).await), id);
    let res = app.get(&feeds_path(shop), &viewer).await;
    assert_status(&res, 200);
    assert_eq!(res.data()["pagination"]["total"], 1);
    assert_eq!(syncs(&app, &acme.key, shop).await["pagination"]["total"], 1);
}

#[actix_web::test]
async fn another_tenants_catalogue_and_feed_are_404_on_every_feed_route() {
    // Proves isolation: another workspace gets 404 on our catalogue's feed routes and on our
    // feed through its own shop; our feed is not reachable through our other shop either; none
    // of it pulls or makes anything.
    let app = spawn().await;
    let server = MockServer::start().await;
    serve(&server, "/feed.csv", 200, "sku,name,price\nA,Kahawa,1800\n", "text/csv").await;
    let acme = app.account(MANAGER).await;
    let other = app.account("all").await;
    let shop = shop(&app, &acme.key, "external").await;
    let second = shop_of(&app, &acme.key, "Second").await;
    let theirs = shop_of(&app, &other.key, "Theirs").await;
    let id = id_of(&create_feed(&app, &acme.key, shop, json!({"url": url(&server, "/feed.csv")})).await);
    app.run_jobs().await;
    let body = json!({"url": url(&server, "/feed.csv")});

    assert_error(&app.post(&feeds_path(shop), &other.key, body.clone()).await, 404);
    assert_error(&app.get(&feeds_path(shop), &other.key).await, 404);
    assert_error(&app.get(&feed_path(shop, id), &other.key).await, 404);
    assert_error(&app.post(&run_path(shop, id), &other.key, json!({})).await, 404);
    assert_error(&app.get(&feed_path(theirs, id), &other.key).await, 404);
    assert_error(&app.post(&run_path(theirs, id), &other.key, json!({})).await, 404);
    assert_error(&app.get(&feed_path(second, id), &acme.key).await, 404);
    assert_error(&app.post(&run_path(second, id), &acme.key, json!({})).await, 404);
    assert_error(&app.get(&feed_path(shop, id + 1000), &acme.key).await, 404);
    assert_error(&app.post(&run_path(shop, id + 1000), &acme.key, json!({})).await, 404);
    app.run_jobs().await;

    assert_eq!(pulls(&server).await, 1, "only our feed's first pull");
    assert_eq!(syncs(&app, &acme.key, shop).await["pagination"]["total"], 1);
    for (key, shop) in [(&other.key, theirs), (&acme.key, second)] {
        let res = app.get(&feeds_path(shop), key).await;
        assert_status(&res, 200);
        assert_eq!(res.data()["pagination"]["total"], 0, "{}", res.body);
        assert_eq!(syncs(&app, key, shop).await["pagination"]["total"], 0);
    }
}

/// A shop named `name` with the defaults: its id.
async fn shop_of<S, B>(app: &TestApp<S>, key: &str, name: &str) -> i64
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    id_of(&create_shop(app, key, json!({"name": name})).await)
}
