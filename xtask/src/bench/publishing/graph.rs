//! A fake of the Graph API's commerce endpoints for workload 17, in the bench's own process:
//! a hyper HTTP/1.1 server on 127.0.0.1 that keeps connections alive and answers what
//! `providers::cloud_catalogue` sends a catalogue:
//!
//! - `POST /{version}/{waba_id}/product_catalogs` (a catalogue created for a shop connected with
//!   `waba_id`): `{"id":"cat-1"}`;
//! - `POST /{version}/{catalogue_id}/items_batch` (a publish): `{"handles":["h"],"validation_status":[]}`,
//!   every item accepted, after reading the whole body and counting its requests.
//!
//! Anything else, or a request without the account's bearer token, is answered with a Graph
//! error object (and counted), which the client reads as the provider's refusal. Nothing is
//! kept: both sides of 17 post to it, so its CPU (the load generator's) is the same for both.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};

use crate::Result;

/// The Graph API version the bench's account names (the service's default too).
pub const VERSION: &str = "v21.0";
/// The catalogue every creation answers.
pub const CATALOGUE_ID: &str = "cat-1";
/// The account's access token: requests without it are refused.
pub const ACCESS_TOKEN: &str = "bench-graph-access-token";
/// What an `items_batch` POST is answered: every item accepted.
const ITEMS_ANSWER: &str = r#"{"handles":["h"],"validation_status":[]}"#;
/// How each request of an `items_batch` body starts, as serde_json writes it compactly.
const REQUEST_MARK: &[u8] = b"\"method\":";

/// What the fake has been asked so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// `product_catalogs` POSTs (catalogues created).
    pub catalogues: u64,
    /// `items_batch` POSTs, and the item requests in their bodies.
    pub posts: u64,
    pub items: u64,
    /// Requests answered with an error: another path or method, or no token.
    pub refused: u64,
}

#[derive(Default)]
struct Counters {
    catalogues: AtomicU64,
    posts: AtomicU64,
    items: AtomicU64,
    refused: AtomicU64,
}

/// The running fake; stops when dropped.
pub struct Graph {
    addr: SocketAddr,
    counters: Arc<Counters>,
    accept: JoinHandle<()>,
}

impl Graph {
    pub async fn start() -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let counters = Arc::new(Counters::default());
        let shared = Arc::clone(&counters);
        let accept = tokio::spawn(async move {
            // Dropped with the accept task: that closes every connection.
            let mut serving = JoinSet::new();
            loop {
                let stream = match listener.accept().await {
                    Ok((stream, _)) => stream,
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let counters = Arc::clone(&shared);
                serving.spawn(async move {
                    let service = service_fn(move |request| answer(request, Arc::clone(&counters)));
                    // A connection that ends badly ends; the client sees it.
                    let _ =
                        http1::Builder::new().keep_alive(true).serve_connection(TokioIo::new(stream), service).await;
                });
                while serving.try_join_next().is_some() {}
            }
        });
        Ok(Self { addr, counters, accept })
    }

    /// What the chat account's `--base-url` is.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Where the catalogue's items are written.
    pub fn items_batch_url(&self) -> String {
        format!("http://{}/{VERSION}/{CATALOGUE_ID}/items_batch", self.addr)
    }

    pub fn counts(&self) -> Counts {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let c = &self.counters;
        Counts {
            catalogues: read(&c.catalogues),
            posts: read(&c.posts),
            items: read(&c.items),
            refused: read(&c.refused),
        }
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// What a request asks of the fake.
#[derive(Debug, PartialEq, Eq)]
enum Route {
    CreateCatalogue,
    ItemsBatch,
    Unknown,
}

/// `/{version}/{id}/product_catalogs` and `/{version}/{id}/items_batch`, POSTed.
fn route(method: &Method, path: &str) -> Route {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match (method, segments.as_slice()) {
        (&Method::POST, [VERSION, id, "product_catalogs"]) if !id.is_empty() => Route::CreateCatalogue,
        (&Method::POST, [VERSION, id, "items_batch"]) if !id.is_empty() => Route::ItemsBatch,
        _ => Route::Unknown,
    }
}

/// The item requests of an `items_batch` body (one `"method":` each).
fn count_requests(body: &[u8]) -> u64 {
    body.windows(REQUEST_MARK.len()).filter(|w| *w == REQUEST_MARK).count() as u64
}

fn json(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static("application/json"));
    response
}

/// A Graph error object, as the client reads a refusal.
fn refusal(status: StatusCode, code: u32, message: &str) -> Response<Full<Bytes>> {
    json(
        status,
        serde_json::json!({ "error": { "message": message, "type": "OAuthException", "code": code } }).to_string(),
    )
}

async fn answer(request: Request<Incoming>, counters: Arc<Counters>) -> hyper::Result<Response<Full<Bytes>>> {
    let wanted = format!("Bearer {ACCESS_TOKEN}");
    let authorized =
        request.headers().get(hyper::header::AUTHORIZATION).is_some_and(|v| v.as_bytes() == wanted.as_bytes());
    let route = route(request.method(), request.uri().path());
    let body = request.into_body().collect().await?.to_bytes();
    if !authorized {
        counters.refused.fetch_add(1, Ordering::Relaxed);
        return Ok(refusal(StatusCode::UNAUTHORIZED, 190, "Invalid OAuth access token."));
    }
    Ok(match route {
        Route::CreateCatalogue => {
            counters.catalogues.fetch_add(1, Ordering::Relaxed);
            json(StatusCode::OK, format!(r#"{{"id":"{CATALOGUE_ID}"}}"#))
        }
        Route::ItemsBatch => {
            counters.items.fetch_add(count_requests(&body), Ordering::Relaxed);
            counters.posts.fetch_add(1, Ordering::Relaxed);
            json(StatusCode::OK, ITEMS_ANSWER.to_owned())
        }
        Route::Unknown => {
            counters.refused.fetch_add(1, Ordering::Relaxed);
            refusal(
                StatusCode::BAD_REQUEST,
                100,
                "Unsupported request: the bench's fake answers catalogue writes only.",
            )
        }
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn only_the_catalogue_writes_are_routed() {
        assert_eq!(route(&Method::POST, "/v21.0/100000000000017/product_catalogs"), Route::CreateCatalogue);
        assert_eq!(route(&Method::POST, "/v21.0/cat-1/items_batch"), Route::ItemsBatch);
        assert_eq!(route(&Method::GET, "/v21.0/cat-1/items_batch"), Route::Unknown);
        assert_eq!(route(&Method::POST, "/v20.0/cat-1/items_batch"), Route::Unknown);
        assert_eq!(route(&Method::POST, "/v21.0//items_batch"), Route::Unknown);
        assert_eq!(route(&Method::GET, "/v21.0/cat-1/products"), Route::Unknown);
    }

    #[test]
    fn the_requests_of_a_batch_body_are_counted() {
        let body = json!({ "item_type": "PRODUCT_ITEM", "allow_upsert": true, "requests": [
            { "method": "UPDATE", "data": { "id": "A" } },
            { "method": "UPDATE", "data": { "id": "B", "title": "\"method\" in a title is escaped" } },
        ]});
        assert_eq!(count_requests(&serde_json::to_vec(&body).expect("json")), 2);
        assert_eq!(count_requests(b""), 0);
    }

    #[tokio::test]
    async fn it_answers_what_the_catalogue_client_expects() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let graph = Graph::start().await.expect("starts");
        let client = reqwest::Client::builder().no_proxy().build().expect("client");
        let post = |url: String, body: Value| client.post(url).bearer_auth(ACCESS_TOKEN).json(&body).send();
        let created =
            post(format!("{}/{VERSION}/100000000000017/product_catalogs", graph.base_url()), json!({"name": "Duka"}))
                .await
                .expect("posts");
        assert_eq!(created.status(), reqwest::StatusCode::OK);
        assert_eq!(created.json::<Value>().await.expect("json"), json!({ "id": CATALOGUE_ID }));
        let requests =
            json!([{ "method": "UPDATE", "data": { "id": "A" } }, { "method": "UPDATE", "data": { "id": "B" } }]);
        let batch = json!({ "item_type": "PRODUCT_ITEM", "allow_upsert": true, "requests": requests });
        for _ in 0..2 {
            let answer = post(graph.items_batch_url(), batch.clone()).await.expect("posts");
            assert_eq!(answer.status(), reqwest::StatusCode::OK);
            let answer: Value = answer.json().await.expect("json");
            assert_eq!(answer["validation_status"], json!([]));
        }
        let refused = client.post(graph.items_batch_url()).json(&batch).send().await.expect("posts");
        assert_eq!(refused.status(), reqwest::StatusCode::UNAUTHORIZED);
        assert!(refused.json::<Value>().await.expect("json")["error"]["code"].is_number());
        let other = client.get(format!("{}/{VERSION}/cat-1/products", graph.base_url())).bearer_auth(ACCESS_TOKEN);
        assert_eq!(other.send().await.expect("gets").status(), reqwest::StatusCode::BAD_REQUEST);
        assert_eq!(graph.counts(), Counts { catalogues: 1, posts: 2, items: 4, refused: 2 });
    }
}
