//! Tests of the address guard: every category, the numeric spellings, and local listeners
//! that prove no connection arrives when one must not.

use super::*;
use proptest::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const DENY: Policy = Policy { allow_loopback: false };
const LOOPBACK: Policy = Policy { allow_loopback: true };

fn ip(s: &str) -> IpAddr {
    s.parse().expect("test address")
}

fn category(s: &str, policy: &Policy) -> Option<Category> {
    match check_ip(ip(s), policy) {
        Ok(()) => None,
        Err(Refusal::Forbidden { category, .. }) => Some(category),
        Err(other) => panic!("unexpected refusal {other:?}"),
    }
}

#[test]
fn every_category_is_refused_v4_and_v6() {
    use Category::*;
    let cases = [
        ("0.0.0.0", Unspecified),
        ("::", Unspecified),
        ("0.1.2.3", ThisNetwork),
        ("127.0.0.1", Loopback),
        ("127.255.0.9", Loopback),
        ("::1", Loopback),
        ("10.0.0.1", Private),
        ("172.16.0.1", Private),
        ("172.31.255.255", Private),
        ("192.168.1.1", Private),
        ("100.64.0.1", SharedAddressSpace),
        ("100.127.255.254", SharedAddressSpace),
        ("169.254.169.254", LinkLocal),
        ("fe80::1", LinkLocal),
        ("224.0.0.1", Multicast),
        ("239.255.255.250", Multicast),
        ("ff02::1", Multicast),
        ("ff0e::1", Multicast),
        ("255.255.255.255", Broadcast),
        ("192.0.2.1", Documentation),
        ("198.51.100.7", Documentation),
        ("203.0.113.9", Documentation),
        ("2001:db8::1", Documentation),
        ("3fff::1", Documentation),
        ("198.18.0.1", Benchmarking),
        ("198.19.255.255", Benchmarking),
        ("2001:2::1", Benchmarking),
        ("240.0.0.1", Reserved),
        ("254.1.2.3", Reserved),
        ("192.0.0.8", Reserved),
        ("2001:10::1", Reserved),
        ("4000::1", Reserved),
        ("fc00::1", UniqueLocal),
        ("fd00::1", UniqueLocal),
        ("fec0::1", SiteLocal),
        ("100::1", Discard),
        ("2001::1", Teredo),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", Teredo),
    ];
    for (addr, expected) in cases {
        assert_eq!(category(addr, &DENY), Some(expected), "{addr}");
    }
}

#[test]
fn embedded_ipv4_is_judged_by_what_it_embeds() {
    let forbidden = [
        ("::ffff:127.0.0.1", Category::Loopback, Embedding::Ipv4Mapped),
        ("::ffff:7f00:1", Category::Loopback, Embedding::Ipv4Mapped),
        ("::ffff:10.0.0.1", Category::Private, Embedding::Ipv4Mapped),
        ("::ffff:169.254.169.254", Category::LinkLocal, Embedding::Ipv4Mapped),
        ("::ffff:0.0.0.0", Category::Unspecified, Embedding::Ipv4Mapped),
        ("::127.0.0.1", Category::Loopback, Embedding::Ipv4Compatible),
        ("::10.0.0.1", Category::Private, Embedding::Ipv4Compatible),
        ("64:ff9b::7f00:1", Category::Loopback, Embedding::Nat64),
        ("64:ff9b::a9fe:a9fe", Category::LinkLocal, Embedding::Nat64),
        ("2002:a00:1::1", Category::Private, Embedding::SixToFour),
        ("2002:7f00:1::", Category::Loopback, Embedding::SixToFour),
    ];
    for (addr, category, via) in forbidden {
        let got = check_ip(ip(addr), &DENY);
        let want = Refusal::Forbidden { ip: ip(addr), category, via: Some(via) };
        assert_eq!(got, Err(want), "{addr}");
    }
    // a deprecated compatible address is refused even around a public one
    assert_eq!(category("::8.8.8.8", &DENY), Some(Category::Reserved));
    for public in ["::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"] {
        assert_eq!(check_ip(ip(public), &DENY), Ok(()), "{public}");
    }
}

#[test]
fn public_addresses_pass_without_any_network_use() {
    for addr in
        ["8.8.8.8", "1.1.1.1", "93.184.215.14", "172.32.0.1", "100.128.0.1", "2606:4700::1", "2a00:1450:4001::1"]
    {
        assert_eq!(check_ip(ip(addr), &DENY), Ok(()), "{addr}");
        assert_eq!(check_ip(ip(addr), &LOOPBACK), Ok(()), "{addr}");
    }
}

#[test]
fn allowing_loopback_allows_only_loopback() {
    for addr in ["127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"] {
        assert_eq!(check_ip(ip(addr), &LOOPBACK), Ok(()), "{addr}");
    }
    for addr in [
        "10.0.0.1",
        "192.168.0.1",
        "169.254.169.254",
        "0.0.0.0",
        "::",
        "fd00::1",
        "::ffff:10.0.0.1",
        "::127.0.0.1",
        "64:ff9b::7f00:1",
        "2002:7f00:1::",
        "224.0.0.1",
    ] {
        assert!(check_ip(ip(addr), &LOOPBACK).is_err(), "{addr}");
    }
}

#[test]
fn policy_reads_only_one_explicit_setting() {
    assert!(Policy::from_setting(Some("1")).allow_loopback);
    assert!(Policy::from_setting(Some("true")).allow_loopback);
    assert!(Policy::from_setting(Some("TRUE")).allow_loopback);
    for off in [None, Some(""), Some("0"), Some("false"), Some("yes"), Some("2")] {
        assert!(!Policy::from_setting(off).allow_loopback, "{off:?}");
    }
    assert_eq!(Policy::default(), DENY);
}

#[test]
fn numeric_spellings_are_addresses() {
    let cases = [
        ("127.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("10.1.2", "10.1.0.2"),
        ("2130706433", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("0X7F000001", "127.0.0.1"),
        ("0x7f.0.0.1", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("0177.0.0.01", "127.0.0.1"),
        ("127.0.0.1.", "127.0.0.1"),
        ("0", "0.0.0.0"),
        ("0x", "0.0.0.0"),
        ("167772161", "10.0.0.1"),
        ("[::1]", "::1"),
        ("::1", "::1"),
        ("[::ffff:127.0.0.1]", "::ffff:127.0.0.1"),
        ("[::ffff:7f00:1]", "::ffff:127.0.0.1"),
        ("[fd00::1]", "fd00::1"),
    ];
    for (host, want) in cases {
        assert_eq!(parse_host_literal(host), Some(ip(want)), "{host}");
    }
    for name in [
        "example.com",
        "localhost",
        "1.2.3.4.5",
        "256.0.0.1",
        "1.2.65536",
        "4294967296",
        "08.0.0.1",
        "0xg.0.0.1",
        "1..2.3",
        "",
        ".",
        "+1.2.3.4",
        "[127.0.0.1]",
        "[::1",
    ] {
        assert_eq!(parse_host_literal(name), None, "{name}");
    }
}

fn refusal(url: &str, policy: &Policy) -> Refusal {
    match check_url(url, policy) {
        Ok(parsed) => panic!("{url} was accepted as {parsed}"),
        Err(refusal) => refusal,
    }
}

#[test]
fn registration_refuses_every_trick() {
    for url in [
        "https://127.1/",
        "https://0x7f000001/",
        "https://[::ffff:127.0.0.1]/",
        "https://[::ffff:7f00:1]/",
        "https://2130706433/",
        "https://0177.0.0.1/",
        "https://127.0.0.1./",
        "https://[::1]/",
        "https://10.0.0.1/",
        "https://169.254.169.254/latest/meta-data",
        "https://[fd00::1]/",
        "https://[fe80::1]/",
        "https://224.0.0.1/",
        "https://0.0.0.0/",
        "https://0/",
        "https://100.64.0.1/",
        "https://[64:ff9b::a00:1]/",
    ] {
        assert!(matches!(refusal(url, &DENY), Refusal::Forbidden { .. }), "{url}");
    }
    // private stays refused when loopback is allowed
    for url in [
        "https://[::ffff:10.0.0.1]/",
        "https://10.0.0.1/",
        "https://169.254.169.254/latest/meta-data",
        "http://192.168.0.1/",
    ] {
        assert!(matches!(refusal(url, &LOOPBACK), Refusal::Forbidden { .. }), "{url}");
    }
    let private = refusal("https://0xa000001/", &LOOPBACK);
    assert_eq!(private, Refusal::Forbidden { ip: ip("10.0.0.1"), category: Category::Private, via: None });
    assert_eq!(
        private.to_string(),
        "10.0.0.1 is a private network address; webhooks are delivered only to public addresses"
    );
    assert_eq!(refusal("https://localhost/hook", &DENY), Refusal::LoopbackName("localhost".into()));
}

#[test]
fn registration_scheme_credentials_and_shape() {
    assert_eq!(refusal("https://user:pw@example.com/", &DENY), Refusal::Credentials);
    assert_eq!(refusal("https://user@example.com/", &DENY), Refusal::Credentials);
    assert_eq!(refusal("https://:pw@example.com/", &DENY), Refusal::Credentials);
    assert_eq!(refusal("http://example.com/", &DENY), Refusal::Scheme("http".into()));
    assert_eq!(refusal("http://example.com/", &LOOPBACK), Refusal::Scheme("http".into()));
    assert_eq!(refusal("ftp://example.com/", &DENY), Refusal::Scheme("ftp".into()));
    assert_eq!(refusal("file:///etc/passwd", &LOOPBACK), Refusal::Scheme("file".into()));
    assert_eq!(refusal("https://example.com:0/", &DENY), Refusal::Port);
    for bad in ["not a url", "/relative/hook", "https://", "https://example.com:70000/"] {
        assert!(matches!(refusal(bad, &DENY), Refusal::NotAUrl(_)), "{bad}");
    }
    // a name passes registration without any lookup (it is checked at every attempt)
    let ok = check_url("https://example.com/hook", &DENY).expect("public name");
    assert_eq!(ok.as_str(), "https://example.com/hook");
    assert!(check_url("https://8.8.8.8:8443/x", &DENY).is_ok());
    assert!(check_url("https://[2606:4700::1]/x", &DENY).is_ok());
}

#[test]
fn plain_http_only_to_loopback_and_only_when_allowed() {
    for url in ["http://127.0.0.1:8080/x", "http://localhost:8080/x", "http://[::1]:8080/x", "http://127.1:8080/x"] {
        assert!(check_url(url, &LOOPBACK).is_ok(), "{url}");
        assert!(check_url(url, &DENY).is_err(), "{url}");
    }
    assert_eq!(
        refusal("http://127.0.0.1:8080/x", &DENY),
        Refusal::Forbidden { ip: ip("127.0.0.1"), category: Category::Loopback, via: None }
    );
    assert!(check_url("https://127.0.0.1:8443/x", &LOOPBACK).is_ok());
}

fn fake_lookup(host: String) -> Pin<Box<dyn Future<Output = io::Result<Vec<SocketAddr>>> + Send>> {
    let addrs: Vec<SocketAddr> = match host.as_str() {
        "public.test" => vec!["93.184.215.14:0", "[2606:4700::1]:0"],
        "mixed.test" => vec!["93.184.215.14:0", "10.0.0.1:0"],
        "mapped.test" => vec!["[::ffff:169.254.169.254]:0"],
        _ => vec![],
    }
    .into_iter()
    .map(|a| a.parse().expect("test socket address"))
    .collect();
    Box::pin(async move { Ok(addrs) })
}

async fn resolve(resolver: &GuardedResolver, host: &str) -> Result<Vec<SocketAddr>, Refusal> {
    let name: Name = host.parse().expect("valid name");
    match resolver.resolve(name).await {
        Ok(addrs) => Ok(addrs.collect()),
        Err(e) => Err(e.downcast_ref::<Refusal>().expect("a refusal").clone()),
    }
}

#[tokio::test]
async fn resolver_refuses_a_name_with_any_forbidden_address() {
    let fake = |policy| GuardedResolver { policy, lookup: fake_lookup };
    let public = resolve(&fake(DENY), "public.test").await.expect("public");
    assert_eq!(public.len(), 2);
    assert_eq!(
        resolve(&fake(LOOPBACK), "mixed.test").await,
        Err(Refusal::Forbidden { ip: ip("10.0.0.1"), category: Category::Private, via: None })
    );
    assert!(matches!(
        resolve(&fake(LOOPBACK), "mapped.test").await,
        Err(Refusal::Forbidden { category: Category::LinkLocal, .. })
    ));
    assert_eq!(resolve(&fake(DENY), "nothing.test").await, Err(Refusal::Unresolvable("nothing.test".into())));
}

#[tokio::test]
async fn resolver_checks_localhost_through_the_system_lookup() {
    let refused = resolve(&GuardedResolver::new(DENY), "localhost").await;
    assert!(matches!(refused, Err(Refusal::Forbidden { category: Category::Loopback, .. })));
    let allowed = resolve(&GuardedResolver::new(LOOPBACK), "localhost").await.expect("localhost allowed");
    assert!(allowed.iter().all(|a| a.ip().is_loopback()));
}

/// Answers one request on `listener` with `response`, then closes.
fn answer_once(listener: TcpListener, response: String) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let Ok((mut stream, _)) = listener.accept().await else {
            return;
        };
        let mut request = Vec::new();
        let mut buf = [0u8; 1024];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => request.extend_from_slice(&buf[..n]),
            }
        }
        let _ = stream.write_all(response.as_bytes()).await;
        let _ = stream.shutdown().await;
    })
}

async fn local_listener() -> (TcpListener, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("local addr").port();
    (listener, port)
}

async fn assert_no_connection(listener: &TcpListener) {
    let accepted = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
    assert!(accepted.is_err(), "a connection arrived");
}

const OK: &str = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";

#[tokio::test]
async fn a_name_for_loopback_is_refused_at_connect_and_nothing_arrives() {
    let (listener, port) = local_listener().await;
    let client = client(DENY, Duration::from_secs(5)).expect("client");
    let err = client.get(format!("http://localhost:{port}/")).send().await.expect_err("refused");
    assert!(matches!(refusal_of(&err), Some(Refusal::Forbidden { category: Category::Loopback, .. })), "{err:?}");
    assert_no_connection(&listener).await;
}

#[tokio::test]
async fn a_name_for_loopback_connects_when_loopback_is_allowed() {
    let (listener, port) = local_listener().await;
    let server = answer_once(listener, OK.to_owned());
    let client = client(LOOPBACK, Duration::from_secs(5)).expect("client");
    let response = client.get(format!("http://localhost:{port}/")).send().await.expect("connects");
    assert_eq!(response.status(), 200);
    assert_eq!(read_excerpt(response, 100).await.expect("read"), "ok");
    server.await.expect("server");
}

#[tokio::test]
async fn check_target_refuses_a_loopback_literal_before_any_connection() {
    let (listener, port) = local_listener().await;
    let url = Url::parse(&format!("http://127.0.0.1:{port}/")).expect("url");
    assert!(matches!(check_target(&url, &DENY), Err(Refusal::Forbidden { category: Category::Loopback, .. })));
    for trick in [
        format!("http://127.1:{port}/"),
        format!("http://0x7f000001:{port}/"),
        format!("http://[::ffff:127.0.0.1]:{port}/"),
    ] {
        let url = Url::parse(&trick).expect("url");
        assert!(check_target(&url, &DENY).is_err(), "{trick}");
    }
    assert_eq!(check_target(&url, &LOOPBACK), Ok(()));
    assert_no_connection(&listener).await;
}

#[tokio::test]
async fn redirects_are_not_followed() {
    let (first, first_port) = local_listener().await;
    let (second, second_port) = local_listener().await;
    let redirect = format!(
        "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:{second_port}/\r\n\
         Content-Length: 0\r\nConnection: close\r\n\r\n"
    );
    let server = answer_once(first, redirect);
    let client = client(LOOPBACK, Duration::from_secs(5)).expect("client");
    let response = client.get(format!("http://127.0.0.1:{first_port}/")).send().await.expect("first answer");
    assert_eq!(response.status(), 302);
    server.await.expect("server");
    assert_no_connection(&second).await;
}

#[tokio::test]
async fn read_excerpt_stops_at_the_limit_of_an_endless_body() {
    let (listener, port) = local_listener().await;
    tokio::spawn(async move {
        let Ok((mut stream, _)) = listener.accept().await else {
            return;
        };
        let mut buf = [0u8; 1024];
        let _ = stream.read(&mut buf).await;
        let head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        if stream.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        let chunk = format!("1000\r\n{}\r\n", "a".repeat(4096));
        while stream.write_all(chunk.as_bytes()).await.is_ok() {}
    });
    let client = client(LOOPBACK, Duration::from_secs(10)).expect("client");
    let response = client.get(format!("http://127.0.0.1:{port}/")).send().await.expect("answer");
    let excerpt =
        tokio::time::timeout(Duration::from_secs(5), read_excerpt(response, 10_000)).await.expect("stops early");
    assert_eq!(excerpt.expect("read").len(), 10_000);
}

#[tokio::test]
async fn read_excerpt_of_a_trickled_body_is_the_timeout() {
    // A receiver that sends its head, then a byte every 200 ms: the attempt's timeout ends it.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        let Ok((mut stream, _)) = listener.accept().await else { return };
        let mut request = [0_u8; 4096];
        let _ = stream.read(&mut request).await;
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n").await;
        while stream.write_all(b"a").await.is_ok() {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    let client = client(LOOPBACK, Duration::from_millis(800)).expect("client");
    let response = client.get(format!("http://127.0.0.1:{port}/")).send().await.expect("answer");
    let read = tokio::time::timeout(Duration::from_secs(5), read_excerpt(response, 10_000)).await.expect("bounded");
    assert!(read.is_err_and(|e| e.is_timeout()));
}

#[tokio::test]
async fn read_excerpt_drops_a_character_cut_at_the_limit() {
    let (listener, port) = local_listener().await;
    let body = "héllo";
    let server = answer_once(
        listener,
        format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()),
    );
    let client = client(LOOPBACK, Duration::from_secs(5)).expect("client");
    let response = client.get(format!("http://127.0.0.1:{port}/")).send().await.expect("answer");
    assert_eq!(read_excerpt(response, 2).await.expect("read"), "h");
    server.await.expect("server");
}

proptest! {
    #[test]
    fn dotted_quad_round_trips(n in any::<u32>()) {
        let addr = Ipv4Addr::from(n);
        prop_assert_eq!(parse_host_literal(&addr.to_string()), Some(IpAddr::V4(addr)));
        prop_assert_eq!(parse_host_literal(&format!("{addr}.")), Some(IpAddr::V4(addr)));
    }

    #[test]
    fn integer_hex_and_octal_forms_equal_the_dotted_one(n in any::<u32>()) {
        let want = Some(IpAddr::V4(Ipv4Addr::from(n)));
        let [a, b, c, d] = n.to_be_bytes();
        prop_assert_eq!(parse_host_literal(&n.to_string()), want);
        prop_assert_eq!(parse_host_literal(&format!("{n:#x}")), want);
        prop_assert_eq!(parse_host_literal(&format!("{n:#o}").replacen("0o", "0", 1)), want);
        prop_assert_eq!(parse_host_literal(&format!("{a:#x}.{b}.{c}.{d}")), want);
        prop_assert_eq!(parse_host_literal(&format!("0{a:o}.0{b:o}.0{c:o}.0{d:o}")), want);
        prop_assert_eq!(parse_host_literal(&format!("{a}.{}", n & 0x00ff_ffff)), want);
        prop_assert_eq!(parse_host_literal(&format!("{a}.{b}.{}", n & 0xffff)), want);
    }

    #[test]
    fn registration_agrees_with_the_address_check(n in any::<u32>(), allow in any::<bool>()) {
        // the url crate rewrites the integer form; either way the same address is judged
        let policy = Policy { allow_loopback: allow };
        let addr = IpAddr::V4(Ipv4Addr::from(n));
        let by_url = check_url(&format!("https://{n}/"), &policy).map(|_| ());
        prop_assert_eq!(by_url, check_ip(addr, &policy));
    }

    #[test]
    fn bracketed_ipv6_round_trips(segments in any::<[u16; 8]>()) {
        let addr = Ipv6Addr::from(segments);
        prop_assert_eq!(parse_host_literal(&format!("[{addr}]")), Some(IpAddr::V6(addr)));
    }
}

#[test]
fn legacy_http_endpoints_pass_the_scheme_rule_but_not_the_address_rules() {
    let public = Url::parse("http://hooks.example.com/in").expect("url");
    assert_eq!(check_target(&public, &DENY), Err(Refusal::Scheme("http".into())));
    assert_eq!(check_attempt(&public, &DENY, true), Ok(()));
    let private = Url::parse("http://10.0.0.8/in").expect("url");
    assert!(matches!(
        check_attempt(&private, &DENY, true),
        Err(Refusal::Forbidden { category: Category::Private, .. })
    ));
    let loopback = Url::parse("http://127.1/in").expect("url");
    assert!(check_attempt(&loopback, &DENY, true).is_err());
}
