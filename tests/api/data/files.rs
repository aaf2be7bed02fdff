//! Files (contract: Data table, column and record, `file` values; docs/api.md "Values"): a
//! stored file set on a record reads as a descriptor with a signed URL; the gateway serves the
//! URL without a key for an hour and refuses it tampered or expired; a file of another tenant
//! cannot be set.

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use api_tests::{Resp, TestApp, json};
use serde_json::Value;
use time::Duration;
use uuid::Uuid;

use super::kit::*;
use super::support::*;

pub const PDF: &[u8] = b"%PDF-1.4 signed contract of Amina Juma";

/// The descriptors of a record's `contract` column.
#[track_caller]
pub fn contract(record: &Value) -> &Vec<Value> {
    record["data"]["contract"].as_array().unwrap_or_else(|| panic!("a list of files in contract: {record}"))
}

/// `GET` of a file URL without a key.
pub async fn fetch<S, B>(app: &TestApp<S>, url: &Value) -> Resp
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    app.request("GET", &local(url), None, None).await
}

/// A served file: 200, the mime type, the bytes.
#[track_caller]
pub fn assert_served(res: &Resp, mime_type: &str, bytes: &[u8]) {
    assert_status(res, 200);
    assert!(
        res.header("content-type").is_some_and(|v| v.starts_with(mime_type)),
        "content-type {mime_type}, got {:?}",
        res.header("content-type")
    );
    assert_eq!(res.body, Value::String(String::from_utf8_lossy(bytes).into_owned()), "the stored bytes");
}

/// A refused file URL: 403 or 404, and not the file.
#[track_caller]
fn assert_refused(res: &Resp, what: &str) {
    assert!(matches!(res.status, 403 | 404), "{what}: expected 403 or 404, got {} {}", res.status, res.body);
    assert_ne!(res.body, Value::String(String::from_utf8_lossy(PDF).into_owned()), "{what}: not the file");
}

/// The query pairs of a URL.
fn query_of(url: &str) -> Vec<(String, String)> {
    let query = url.split_once('?').map(|(_, q)| q).unwrap_or_default();
    serde_urlencoded::from_str(query).expect("a URL query")
}

/// `url` with the query pair `name` replaced by `value` (None: removed).
fn with_param(url: &str, name: &str, value: Option<&str>) -> String {
    let path = url.split_once('?').map_or(url, |(p, _)| p);
    let pairs: Vec<(String, String)> = query_of(url)
        .into_iter()
        .filter_map(|(k, v)| if k == name { value.map(|new| (k, new.to_owned())) } else { Some((k, v)) })
        .collect();
    format!("{path}?{}", serde_urlencoded::to_string(&pairs).expect("query"))
}

/// The CRM, a stored PDF and a customer holding it.
async fn filed<S, B>(app: &TestApp<S>) -> (Crm, Uuid, Value)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let crm = crm_with(app, EDITOR).await;
    let file = app
        .data
        .store_file(crm.account.tenant, "contract.pdf", "application/pdf", PDF.to_vec())
        .await
        .expect("store a file");
    let record =
        create(app, &crm.account.key, crm.customers, json!({"name": "Amina", "contract": file.to_string()})).await;
    (crm, file, record)
}

#[actix_web::test]
async fn a_file_on_a_record_reads_as_a_descriptor_whose_url_serves_the_bytes() {
    // Proves the descriptor {id, name, mime_type, size, url, url_expires_at} on create and on
    // read, and that its URL (no key) answers the stored bytes with their mime type.
    let app = roomy().await;
    let (crm, file, record) = filed(&app).await;
    let now = app.clock.now();
    for record in [record.clone(), read(&app, &crm.account.key, crm.customers, &record_id(&record)).await] {
        let files = contract(&record);
        assert_eq!(files.len(), 1, "{record}");
        let d = &files[0];
        assert_eq!(d["id"], file.to_string(), "{d}");
        assert_eq!(d["name"], "contract.pdf");
        assert_eq!(d["mime_type"], "application/pdf");
        assert_eq!(d["size"], PDF.len(), "{d}");
        let url = d["url"].as_str().unwrap_or_else(|| panic!("url in {d}"));
        let path = local(&d["url"]);
        assert!(path.starts_with(&format!("/files/{file}?")), "the gateway's /files/{{id}}: {url}");
        let params: Vec<String> = query_of(url).into_iter().map(|(k, _)| k).collect();
        assert!(params.iter().any(|k| k == "expires") && params.iter().any(|k| k == "signature"), "{url}");
        let expires = time_of(&d["url_expires_at"]);
        assert!((expires - (now + Duration::hours(1))).abs() <= Duration::seconds(2), "valid 1 hour: {d}");
        assert_served(&fetch(&app, &d["url"]).await, "application/pdf", PDF);
    }

    // A reader without write access gets a working URL too.
    let user = app.user(crm.account.tenant, VIEWER).await;
    let viewer = app.key(crm.account.tenant, user).await;
    let seen = read(&app, &viewer, crm.customers, &record_id(&record)).await;
    assert_served(&fetch(&app, &contract(&seen)[0]["url"]).await, "application/pdf", PDF);
}

#[actix_web::test]
async fn a_file_value_may_be_an_id_an_object_or_a_list() {
    // Proves the accepted forms of a file value (id, {id}, a list of either) and their order.
    let app = roomy().await;
    let (crm, first, record) = filed(&app).await;
    let key = &crm.account.key;
    let image = app
        .data
        .store_file(crm.account.tenant, "photo.png", "image/png", b"\x89PNG fake image".to_vec())
        .await
        .expect("store a second file");
    let both = update(
        &app,
        key,
        crm.customers,
        &record_id(&record),
        json!({"contract": [{"id": image.to_string()}, first.to_string()]}),
    )
    .await;
    let ids: Vec<&Value> = contract(&both).iter().map(|d| &d["id"]).collect();
    assert_eq!(ids, [&json!(image.to_string()), &json!(first.to_string())], "{both}");
    assert_eq!(contract(&both)[0]["mime_type"], "image/png");
    assert_served(&fetch(&app, &contract(&both)[1]["url"]).await, "application/pdf", PDF);

    let one =
        update(&app, key, crm.customers, &record_id(&record), json!({"contract": {"id": image.to_string()}})).await;
    assert_eq!(contract(&one).len(), 1, "{one}");
    assert_eq!(contract(&one)[0]["name"], "photo.png");
}

#[actix_web::test]
async fn a_tampered_file_url_is_refused() {
    // Proves the HMAC: a changed signature, a later expiry, no signature, or another file's id
    // under this signature are refused, while the URL as given works.
    let app = roomy().await;
    let (crm, _, record) = filed(&app).await;
    let other = app
        .data
        .store_file(crm.account.tenant, "other.pdf", "application/pdf", b"%PDF other".to_vec())
        .await
        .expect("store a file");
    let d = &contract(&record)[0];
    let url = local(&d["url"]);
    assert_served(&app.request("GET", &url, None, None).await, "application/pdf", PDF);

    let signature = query_of(&url).into_iter().find(|(k, _)| k == "signature").expect("signature").1;
    let mut flipped = signature.clone();
    let last = flipped.pop().expect("a signature");
    flipped.push(if last == 'a' { 'b' } else { 'a' });
    let expires: i64 = query_of(&url)
        .into_iter()
        .find(|(k, _)| k == "expires")
        .expect("expires")
        .1
        .parse()
        .expect("expires is a Unix time");
    let later = (expires + 86_400).to_string();
    let file_id = d["id"].as_str().expect("id");
    for (what, tampered) in [
        ("changed signature", with_param(&url, "signature", Some(&flipped))),
        ("empty signature", with_param(&url, "signature", Some(""))),
        ("no signature", with_param(&url, "signature", None)),
        ("later expiry", with_param(&url, "expires", Some(&later))),
        ("no expiry", with_param(&url, "expires", None)),
        ("another file", url.replacen(file_id, &other.to_string(), 1)),
        ("no query", format!("/files/{file_id}")),
    ] {
        let res = app.request("GET", &tampered, None, None).await;
        assert_refused(&res, what);
    }
}

#[actix_web::test]
async fn a_file_url_expires_after_an_hour_and_a_new_read_signs_a_new_one() {
    // Proves the one-hour validity on the service's clock: valid at 59 minutes, refused after
    // an hour; reading the record again gives a URL that works.
    let app = roomy().await;
    let (crm, _, record) = filed(&app).await;
    let url = contract(&record)[0]["url"].clone();
    app.advance(Duration::minutes(59)).await;
    assert_served(&fetch(&app, &url).await, "application/pdf", PDF);
    app.advance(Duration::minutes(2)).await;
    assert_refused(&fetch(&app, &url).await, "expired");

    let fresh = read(&app, &crm.account.key, crm.customers, &record_id(&record)).await;
    let d = &contract(&fresh)[0];
    assert_ne!(d["url"], url, "a new URL");
    assert!(time_of(&d["url_expires_at"]) > app.clock.now() + Duration::minutes(59), "{d}");
    assert_served(&fetch(&app, &d["url"]).await, "application/pdf", PDF);
}

#[actix_web::test]
async fn a_file_of_another_tenant_or_no_file_cannot_be_set() {
    // Proves that a file value must be a file this tenant stored: another tenant's id and an
    // unknown id are 422 on create and on update, and the record keeps its file.
    let app = roomy().await;
    let (crm, file, record) = filed(&app).await;
    let key = &crm.account.key;
    let other = app.account(EDITOR).await;
    let theirs = app
        .data
        .store_file(other.tenant, "theirs.pdf", "application/pdf", b"%PDF theirs".to_vec())
        .await
        .expect("store a file for the other tenant");
    for bad in [
        json!(theirs.to_string()),
        json!({"id": theirs.to_string()}),
        json!([file.to_string(), theirs.to_string()]),
        json!(Uuid::new_v4().to_string()),
        json!("not-a-uuid"),
    ] {
        let res =
            app.post(&records_path(crm.customers), key, json!({"data": {"name": "Baraka", "contract": bad}})).await;
        assert_data_error(&res, 422, "validation_error");
        let res =
            app.patch(&record_path(crm.customers, &record_id(&record)), key, json!({"data": {"contract": bad}})).await;
        assert_data_error(&res, 422, "validation_error");
    }
    let kept = read(&app, key, crm.customers, &record_id(&record)).await;
    let ids: Vec<&Value> = contract(&kept).iter().map(|d| &d["id"]).collect();
    assert_eq!(ids, [&json!(file.to_string())], "{kept}");
    let body = list(&app, key, crm.customers, &[("with_count", "1")]).await;
    assert_eq!(body["count"], 1, "no record was made: {body}");

    // The other tenant can use its own file.
    let applied = apply(&app, &other, super::support::crm()).await;
    let customers = applied.tables.iter().find(|t| t.slug == "customers").expect("customers").id;
    let mine = create(&app, &other.key, customers, json!({"name": "Theirs", "contract": theirs.to_string()})).await;
    assert_served(&fetch(&app, &contract(&mine)[0]["url"]).await, "application/pdf", b"%PDF theirs");
}
