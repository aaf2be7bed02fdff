//! Slow and greedy clients (issue 15, Faults) against a real `gateway serve` over raw TCP: a
//! head that trickles is cut off by the header timeout, a body that trickles by the request
//! timeout (408 in the envelope), a body over the limit is a 413 in the envelope whether its
//! length is declared or not, and a flood of headers is refused with 431. Each time the
//! connection is closed, so a slow client holds nothing for long.

use std::time::{Duration, Instant};

use api_tests::spawn;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::process::{Gateway, gateway_bin};

/// What the server said before it closed the connection, and how long that took.
struct Closed {
    status: u16,
    head: String,
    body: Value,
    after: Duration,
}

/// Reads until the server closes the connection (failing after `within`).
async fn until_closed(stream: &mut TcpStream, started: Instant, within: Duration) -> Closed {
    let read = read_for(stream, started, within).await;
    assert!(read.1, "the connection was still open after {within:?}: {}", read.0.head);
    read.0
}

/// Reads what arrives within `within`; says whether the server closed the connection.
async fn read_for(stream: &mut TcpStream, started: Instant, within: Duration) -> (Closed, bool) {
    let mut bytes = Vec::new();
    let closed = tokio::time::timeout(within, stream.read_to_end(&mut bytes)).await.is_ok();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = serde_json::from_str(body).unwrap_or(Value::Null);
    (Closed { status, head: head.to_owned(), body, after: started.elapsed() }, closed)
}

async fn connect(gateway: &Gateway) -> TcpStream {
    TcpStream::connect(gateway.url.trim_start_matches("http://")).await.expect("connect")
}

#[tokio::test]
async fn slow_and_greedy_clients_are_cut_off() {
    let app = spawn().await;
    let acme = app.account("all").await;
    let gateway = Gateway::start(
        &gateway_bin(),
        app.db.url(),
        51,
        &[("SVC_CLIENT_HEADER_TIMEOUT_MS", "1000"), ("SVC_REQUEST_TIMEOUT_MS", "1500"), ("SVC_MAX_BODY_BYTES", "1024")],
    )
    .await;

    // A head that trickles: a byte of a header every 300 ms, never finished.
    let mut stream = connect(&gateway).await;
    let started = Instant::now();
    stream.write_all(b"GET /api/v3/me HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ").await.expect("write");
    let trickle = async {
        loop {
            tokio::time::sleep(Duration::from_millis(300)).await;
            if stream.write_all(b"a").await.is_err() {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(4), trickle).await;
    assert!(started.elapsed() < Duration::from_secs(4), "the server still read a head trickled for 4 s");
    let closed = until_closed(&mut stream, started, Duration::from_secs(1)).await;
    assert!(matches!(closed.status, 0 | 408), "{}", closed.head);

    // A body that trickles: 10 of 100 declared bytes, then nothing.
    let mut stream = connect(&gateway).await;
    let started = Instant::now();
    let head = format!(
        "POST /api/v3/contact-groups HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"name\": ",
        acme.key
    );
    stream.write_all(head.as_bytes()).await.expect("write");
    let closed = until_closed(&mut stream, started, Duration::from_secs(5)).await;
    assert_eq!(closed.status, 408, "{}", closed.head);
    assert_eq!(closed.body["status"], "error");
    assert!(closed.body["message"].as_str().is_some_and(|m| m.contains("did not arrive")), "{}", closed.body);
    assert!(closed.after >= Duration::from_millis(1400) && closed.after < Duration::from_secs(4), "{:?}", closed.after);
    assert!(closed.head.to_ascii_lowercase().contains("x-request-id"), "{}", closed.head);

    // Bodies over the limit, declared or chunked: 413 in the envelope; nothing was made.
    let big = format!("{{\"name\": \"{}\"}}", "x".repeat(2_000));
    let client = reqwest::Client::new();
    let res = client
        .post(format!("{}/api/v3/contact-groups", gateway.url))
        .bearer_auth(&acme.key)
        .header("content-type", "application/json")
        .body(big.clone())
        .send()
        .await
        .expect("declared");
    assert_eq!(res.status().as_u16(), 413);
    let body: Value = res.json().await.expect("JSON");
    assert_eq!(body["status"], "error", "{body}");
    assert_eq!(body["message"], "The request body is too large.");
    let mut stream = connect(&gateway).await;
    let started = Instant::now();
    let mut request = format!(
        "POST /api/v3/contact-groups HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
        acme.key
    );
    for chunk in big.as_bytes().chunks(256) {
        request.push_str(&format!("{:x}\r\n{}\r\n", chunk.len(), String::from_utf8_lossy(chunk)));
    }
    request.push_str("0\r\n\r\n");
    let _ = stream.write_all(request.as_bytes()).await;
    let (closed, _) = read_for(&mut stream, started, Duration::from_secs(1)).await;
    assert_eq!(closed.status, 413, "{}", closed.head);
    assert_eq!(closed.body["message"], "The request body is too large.");
    let groups = app.get("/api/v3/contact-groups", &acme.key).await;
    assert_eq!(groups.data()["pagination"]["total"], 0, "{}", groups.body);

    // A flood of headers, by count and by size: 431, and the connection closed.
    for flood in [
        (0..200).map(|i| format!("X-Flood-{i}: 1\r\n")).collect::<String>(),
        format!("X-Huge: {}\r\n", "h".repeat(200_000)),
    ] {
        let mut stream = connect(&gateway).await;
        let started = Instant::now();
        let request = format!("GET /api/v3/me HTTP/1.1\r\nHost: 127.0.0.1\r\n{flood}\r\n");
        let _ = stream.write_all(request.as_bytes()).await;
        let closed = until_closed(&mut stream, started, Duration::from_secs(3)).await;
        assert_eq!(closed.status, 431, "{}", closed.head);
    }

    // The gateway is none the worse.
    let me = client.get(format!("{}/api/v3/me", gateway.url)).bearer_auth(&acme.key).send().await.expect("me");
    assert_eq!(me.status().as_u16(), 200);
}
