//! The address guard (issue 4, Safety): deliveries never reach private, loopback, link-local,
//! multicast or otherwise internal addresses, whatever spelling or DNS answer is used.
//!
//! reqwest calls its resolver only for names, so the check sits in two places:
//! - a host that is an IP literal, in any numeric spelling (`127.1`, `0x7f000001`,
//!   `[::ffff:127.0.0.1]`), is checked by [`check_url`] at registration and by [`check_target`]
//!   before every attempt;
//! - a DNS name passes registration and is checked at every connect by [`GuardedResolver`]: it
//!   resolves, refuses the whole name if any address is forbidden, and hands reqwest exactly
//!   the addresses it checked, which are the ones connected to (no second lookup to rebind).
//!
//! The [`client`] also follows no redirect, uses no proxy and has a timeout; [`read_excerpt`]
//! reads only the start of a receiver's answer.

use std::fmt;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Why a webhook target is refused. The texts are shown to API users.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("the webhook URL is not a valid absolute URL ({0})")]
    NotAUrl(String),
    #[error("the webhook URL must use https (plain http only to loopback during local development), not `{0}`")]
    Scheme(String),
    #[error("the webhook URL must not contain a user name or password")]
    Credentials,
    #[error("the webhook URL has no host")]
    NoHost,
    #[error("the webhook URL's port must be between 1 and 65535")]
    Port,
    #[error("{}; webhooks are delivered only to public addresses", describe(.ip, .category, .via))]
    Forbidden { ip: IpAddr, category: Category, via: Option<Embedding> },
    #[error("{0} names this machine (loopback); webhooks are delivered only to public addresses")]
    LoopbackName(String),
    #[error("the webhook host {0} resolves to no address")]
    Unresolvable(String),
}

fn describe(ip: &IpAddr, category: &Category, via: &Option<Embedding>) -> String {
    match via {
        None => format!("{ip} is {category}"),
        Some(via) => format!("{ip} carries {category} inside an {via} IPv6 address"),
    }
}

/// The kind of address a refused target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    Unspecified,
    /// 0.0.0.0/8
    ThisNetwork,
    Loopback,
    /// 10/8, 172.16/12, 192.168/16
    Private,
    /// 100.64/10, carrier-grade NAT
    SharedAddressSpace,
    LinkLocal,
    Multicast,
    Broadcast,
    Documentation,
    /// 198.18/15, 2001:2::/48
    Benchmarking,
    /// 240/4, IETF protocol blocks, everything in IPv6 outside global unicast 2000::/3
    Reserved,
    /// fc00::/7
    UniqueLocal,
    /// fec0::/10
    SiteLocal,
    /// 100::/64
    Discard,
    /// 2001::/32, a tunnel that can reach anything
    Teredo,
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Unspecified => "an unspecified address",
            Self::ThisNetwork => "a \"this network\" address (0.0.0.0/8)",
            Self::Loopback => "a loopback address",
            Self::Private => "a private network address",
            Self::SharedAddressSpace => "a shared carrier-grade NAT address (100.64.0.0/10)",
            Self::LinkLocal => "a link-local address",
            Self::Multicast => "a multicast address",
            Self::Broadcast => "the broadcast address",
            Self::Documentation => "a documentation address",
            Self::Benchmarking => "a benchmarking address",
            Self::Reserved => "a reserved address",
            Self::UniqueLocal => "a unique-local address (fc00::/7)",
            Self::SiteLocal => "a site-local address (fec0::/10)",
            Self::Discard => "a discard-only address (100::/64)",
            Self::Teredo => "a Teredo tunnel address (2001::/32)",
        })
    }
}

/// How an IPv6 address embeds the IPv4 address that was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Embedding {
    /// ::ffff:0:0/96
    Ipv4Mapped,
    /// ::/96 (deprecated)
    Ipv4Compatible,
    /// 64:ff9b::/96
    Nat64,
    /// 2002::/16
    SixToFour,
}

impl fmt::Display for Embedding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Ipv4Mapped => "IPv4-mapped",
            Self::Ipv4Compatible => "IPv4-compatible",
            Self::Nat64 => "NAT64",
            Self::SixToFour => "6to4",
        })
    }
}

/// What the guard lets through beyond public addresses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Policy {
    /// Loopback targets (and plain http to them), for local development and tests only.
    /// Private ranges stay refused even then.
    pub allow_loopback: bool,
}

impl Policy {
    pub const ALLOW_LOOPBACK_ENV: &'static str = "SVC_WEBHOOKS_ALLOW_LOOPBACK";

    /// `SVC_WEBHOOKS_ALLOW_LOOPBACK=1` (or `true`) allows loopback; anything else, or nothing, refuses it.
    pub fn from_env() -> Self {
        Self::from_setting(std::env::var(Self::ALLOW_LOOPBACK_ENV).ok().as_deref())
    }

    fn from_setting(value: Option<&str>) -> Self {
        let value = value.map(str::trim).unwrap_or_default();
        Self { allow_loopback: value == "1" || value.eq_ignore_ascii_case("true") }
    }
}

/// Refuses every address that is not public, except loopback when the policy allows it.
pub fn check_ip(ip: IpAddr, policy: &Policy) -> Result<(), Refusal> {
    match classify(ip) {
        None => Ok(()),
        // ::ffff:127.0.0.1 is this machine too; NAT64/6to4/compatible forms are not.
        Some((Category::Loopback, None | Some(Embedding::Ipv4Mapped))) if policy.allow_loopback => Ok(()),
        Some((category, via)) => Err(Refusal::Forbidden { ip, category, via }),
    }
}

fn classify(ip: IpAddr) -> Option<(Category, Option<Embedding>)> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4).map(|c| (c, None)),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<Category> {
    use Category::*;
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        _ if ip.is_unspecified() => Unspecified,
        (0, ..) => ThisNetwork,
        (127, ..) => Loopback,
        (10, ..) | (172, 16..=31, _) | (192, 168, _) => Private,
        (100, 64..=127, _) => SharedAddressSpace,
        (169, 254, _) => LinkLocal,
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => Documentation,
        // IETF protocol assignments, deprecated 6to4 relay anycast
        (192, 0, 0) | (192, 88, 99) => Reserved,
        (198, 18..=19, _) => Benchmarking,
        (224..=239, ..) => Multicast,
        _ if ip.is_broadcast() => Broadcast,
        (240..=255, ..) => Reserved,
        _ => return None,
    })
}

fn classify_v6(ip: Ipv6Addr) -> Option<(Category, Option<Embedding>)> {
    use Category::*;
    let s = ip.segments();
    let v4_at = |i: usize| Ipv4Addr::from((u32::from(s[i]) << 16) | u32::from(s[i + 1]));
    let embedded = |v4: Ipv4Addr, via| classify_v4(v4).map(|c| (c, Some(via)));
    let category = match s {
        _ if ip.is_unspecified() => Unspecified,
        _ if ip.is_loopback() => Loopback,
        [0, 0, 0, 0, 0, 0xffff, ..] => return embedded(v4_at(6), Embedding::Ipv4Mapped),
        // deprecated: refused even around a public address
        [0, 0, 0, 0, 0, 0, ..] => {
            return embedded(v4_at(6), Embedding::Ipv4Compatible).or(Some((Reserved, None)));
        }
        [0x64, 0xff9b, 0, 0, 0, 0, ..] => return embedded(v4_at(6), Embedding::Nat64),
        [0x2002, ..] => return embedded(v4_at(1), Embedding::SixToFour),
        [0x2001, 0, ..] => Teredo,
        [0x2001, 2, 0, ..] => Benchmarking,
        [0x2001, 0xdb8, ..] | [0x3fff, 0..=0x0fff, ..] => Documentation,
        [0x2001, 0..=0x1ff, ..] => Reserved,
        [0x100, 0, 0, 0, ..] => Discard,
        [0xff00..=0xffff, ..] => Multicast,
        [0xfe80..=0xfebf, ..] => LinkLocal,
        [0xfec0..=0xfeff, ..] => SiteLocal,
        [0xfc00..=0xfdff, ..] => UniqueLocal,
        [0x2000..=0x3fff, ..] => return None,
        _ => Reserved,
    };
    Some((category, None))
}

/// Reads a host as an IP address in every spelling browsers and `inet_aton` accept, so numeric
/// tricks are classified as addresses and never sent to DNS: `127.1`, `10.1.2`, `2130706433`,
/// `0x7f000001`, `0x7f.0.0.1`, `0177.0.0.1`, `127.0.0.1.`, `[::ffff:127.0.0.1]`, `::1`.
pub fn parse_host_literal(host: &str) -> Option<IpAddr> {
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return inner.parse::<Ipv6Addr>().ok().map(IpAddr::V6);
    }
    if host.contains(':') {
        return host.parse::<Ipv6Addr>().ok().map(IpAddr::V6);
    }
    parse_ipv4_loose(host).map(IpAddr::V4)
}

fn parse_ipv4_loose(host: &str) -> Option<Ipv4Addr> {
    let host = host.strip_suffix('.').unwrap_or(host);
    let parts = host.split('.').map(parse_ipv4_number).collect::<Option<Vec<u32>>>()?;
    let (&last, init) = parts.split_last()?;
    if parts.len() > 4 || init.iter().any(|&p| p > 255) {
        return None;
    }
    // The last part fills the bytes the others left: `127.1` is 127.0.0.1.
    let last_bits = 8 * (5 - parts.len());
    if last_bits < 32 && last >> last_bits != 0 {
        return None;
    }
    let high = init.iter().enumerate().fold(0u32, |n, (i, &p)| n | p << (24 - 8 * i));
    Some(Ipv4Addr::from(high | last))
}

fn parse_ipv4_number(part: &str) -> Option<u32> {
    let (digits, radix) = if let Some(hex) = part.strip_prefix("0x").or(part.strip_prefix("0X")) {
        (hex, 16)
    } else if part.len() > 1 && part.starts_with('0') {
        (&part[1..], 8)
    } else {
        (part, 10)
    };
    if part.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    if digits.is_empty() {
        return Some(0); // `0x` alone is zero, as in browsers
    }
    u32::from_str_radix(digits, radix).ok()
}

/// Registration-time check: an absolute https URL without credentials whose host, if it is an
/// address, is allowed. A DNS name passes here; it is checked at every attempt.
pub fn check_url(url: &str, policy: &Policy) -> Result<Url, Refusal> {
    let parsed = Url::parse(url).map_err(|e| Refusal::NotAUrl(e.to_string()))?;
    check_target(&parsed, policy)?;
    Ok(parsed)
}

/// The check before every attempt. An IP-literal host is checked here because reqwest connects
/// to it without asking the resolver; a name is checked by [`GuardedResolver`] at connect time.
pub fn check_target(url: &Url, policy: &Policy) -> Result<(), Refusal> {
    check_attempt(url, policy, false)
}

/// [`check_target`] for an endpoint registered over plain http before 26 September 2026, which
/// keeps receiving over http until its URL is edited (contract: Versioning) when `legacy_http`.
/// Its addresses are checked all the same.
pub fn check_attempt(url: &Url, policy: &Policy, legacy_http: bool) -> Result<(), Refusal> {
    let scheme = url.scheme();
    if scheme != "https" && scheme != "http" {
        return Err(Refusal::Scheme(scheme.to_owned()));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Refusal::Credentials);
    }
    if url.port() == Some(0) {
        return Err(Refusal::Port);
    }
    // `host_str` is dotted for IPv4 (the url crate already rewrote `127.1` and friends) and
    // bracketed for IPv6; `parse_host_literal` reads both and any spelling the parser left alone.
    let host = url.host_str().filter(|h| !h.is_empty()).ok_or(Refusal::NoHost)?;
    let to_loopback = match parse_host_literal(host) {
        Some(ip) => {
            check_ip(ip, policy)?;
            matches!(classify(ip), Some((Category::Loopback, None | Some(Embedding::Ipv4Mapped))))
        }
        None if is_localhost_name(host) => {
            if !policy.allow_loopback {
                return Err(Refusal::LoopbackName(host.to_owned()));
            }
            true
        }
        None => false,
    };
    if scheme == "http" && !legacy_http && !(policy.allow_loopback && to_loopback) {
        return Err(Refusal::Scheme(scheme.to_owned()));
    }
    Ok(())
}

/// RFC 6761: `localhost` and its subdomains are this machine.
fn is_localhost_name(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    host == "localhost" || host.ends_with(".localhost")
}

type Lookup = fn(String) -> Pin<Box<dyn Future<Output = io::Result<Vec<SocketAddr>>> + Send>>;

fn system_lookup(host: String) -> Pin<Box<dyn Future<Output = io::Result<Vec<SocketAddr>>> + Send>> {
    Box::pin(async move { Ok(tokio::net::lookup_host((host.as_str(), 0)).await?.collect()) })
}

/// reqwest resolver that checks every address it hands out: reqwest connects only to what it
/// returns, so the checked address is the one connected to.
#[derive(Debug, Clone)]
pub struct GuardedResolver {
    policy: Policy,
    lookup: Lookup,
}

impl GuardedResolver {
    pub fn new(policy: Policy) -> Self {
        Self { policy, lookup: system_lookup }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let (policy, lookup) = (self.policy, self.lookup);
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs = match parse_host_literal(&host) {
                Some(ip) => vec![SocketAddr::new(ip, 0)],
                None => lookup(host.clone()).await?,
            };
            let checked = check_resolved(&host, addrs, &policy)?;
            Ok(Box::new(checked.into_iter()) as Addrs)
        })
    }
}

/// One forbidden address refuses the whole name: a name answering both a public and a private
/// address must not get a chance at the private one.
fn check_resolved(host: &str, addrs: Vec<SocketAddr>, policy: &Policy) -> Result<Vec<SocketAddr>, Refusal> {
    if addrs.is_empty() {
        return Err(Refusal::Unresolvable(host.to_owned()));
    }
    for addr in &addrs {
        check_ip(addr.ip(), policy)?;
    }
    Ok(addrs)
}

/// The refusal behind a failed request, when the guard was the reason.
pub fn refusal_of(error: &reqwest::Error) -> Option<&Refusal> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if let Some(refusal) = e.downcast_ref::<Refusal>() {
            return Some(refusal);
        }
        source = e.source();
    }
    None
}

/// The delivery client: guarded resolver, no redirects, no proxy, a timeout for the whole attempt.
/// Call [`check_target`] before each attempt as well (IP-literal hosts skip the resolver).
pub fn client(policy: Policy, timeout: Duration) -> Result<reqwest::Client, String> {
    // Installing twice is harmless; the first provider wins.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .user_agent(concat!("svc-webhooks/", env!("CARGO_PKG_VERSION")))
        .dns_resolver(Arc::new(GuardedResolver::new(policy)))
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(timeout)
        .build()
        .map_err(|e| format!("cannot build the webhook HTTP client: {e}"))
}

/// At most `limit` bytes of the body, read chunk by chunk and stopping as soon as it has them;
/// invalid UTF-8 is replaced, a character cut at the limit dropped. A body that trickles past
/// the client's timeout is that timeout (`Err`); one cut off otherwise is what arrived.
pub async fn read_excerpt(mut response: reqwest::Response, limit: usize) -> Result<String, reqwest::Error> {
    let mut buf = Vec::with_capacity(limit.min(16 * 1024));
    while buf.len() < limit {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let take = chunk.len().min(limit - buf.len());
                buf.extend_from_slice(&chunk[..take]);
            }
            Err(error) if error.is_timeout() => return Err(error),
            Ok(None) | Err(_) => break,
        }
    }
    if let Err(e) = std::str::from_utf8(&buf)
        && e.error_len().is_none()
    {
        buf.truncate(e.valid_up_to());
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

#[cfg(test)]
mod tests;
