//! A receiver's custom headers: names checked against the ones the service sets itself, values
//! sealed with ChaCha20-Poly1305 (ring's AEAD) and opened only to send them.

use std::collections::BTreeMap;

use kernel::Error;
use kernel::error::FieldErrors;
use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Contract: up to five custom headers.
pub const MAX_HEADERS: usize = 5;
const MAX_NAME_LEN: usize = 64;
const MAX_VALUE_LEN: usize = 2_048;

/// Why a name cannot be a custom header: the contract's refused names, plus the hop-by-hop
/// headers HTTP itself owns (a receiver could never see them as sent).
pub fn refused(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    let service = ["x-delivery-id", "x-timestamp", "content-type", "content-length", "host", "user-agent"];
    let hop_by_hop = ["connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade"];
    if lower.starts_with("x-signature") || lower.starts_with("x-event") || service.contains(&lower.as_str()) {
        Some("is set by the service on every delivery")
    } else if hop_by_hop.contains(&lower.as_str()) || lower.starts_with("proxy-") {
        Some("is a hop-by-hop header")
    } else {
        None
    }
}

/// RFC 9110 token characters.
fn is_token(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Visible ASCII, spaces and tabs inside; no line breaks (they would start a new header).
fn is_value(value: &str) -> bool {
    value.bytes().all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
}

/// One header as stored: its name in clear, its value sealed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Sealed {
    pub name: String,
    /// Hex of nonce followed by ciphertext and tag.
    pub sealed: String,
}

/// What a request asked for one header: a value, or (on update) "keep the stored one".
pub type Requested = BTreeMap<String, Option<String>>;

/// Reads `headers` from a request body: an object of at most five names, each a string (or,
/// when `keep_allowed`, null). Names are compared without case; a name given twice is refused.
pub fn parse(raw: &Value, keep_allowed: bool, errors: &mut FieldErrors) -> Requested {
    let mut requested = Requested::new();
    let Value::Object(map) = raw else {
        errors.add("headers", "headers must be an object of header names to values.");
        return requested;
    };
    if map.len() > MAX_HEADERS {
        errors.add("headers", format!("At most {MAX_HEADERS} custom headers are allowed."));
    }
    let mut seen = std::collections::BTreeSet::new();
    for (name, value) in map {
        let field = format!("headers.{name}");
        if !is_token(name) || name.len() > MAX_NAME_LEN {
            errors.add(field, format!("\"{name}\" is not a valid header name."));
            continue;
        }
        if let Some(why) = refused(name) {
            errors.add(field, format!("{name} cannot be a custom header: it {why}."));
            continue;
        }
        if !seen.insert(name.to_ascii_lowercase()) {
            errors.add(field, format!("{name} is given twice."));
            continue;
        }
        match value {
            Value::String(v) if v.len() > MAX_VALUE_LEN => {
                errors.add(field, format!("A header value may not be longer than {MAX_VALUE_LEN} characters."))
            }
            Value::String(v) if !is_value(v) => {
                errors.add(field, "A header value may hold only visible ASCII characters, spaces and tabs.")
            }
            Value::String(v) => {
                requested.insert(name.clone(), Some(v.clone()));
            }
            Value::Null if keep_allowed => {
                requested.insert(name.clone(), None);
            }
            Value::Null => errors.add(field, "A new header needs a value."),
            _ => errors.add(field, "A header value must be a string."),
        }
    }
    requested
}

/// The key that seals header values. Operators give it as `SVC_WEBHOOKS_HEADER_KEY` (64 hex
/// digits); without it the service makes one and keeps it in the database.
#[derive(Clone)]
pub struct HeaderKey {
    key: std::sync::Arc<LessSafeKey>,
}

impl std::fmt::Debug for HeaderKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HeaderKey(..)")
    }
}

impl HeaderKey {
    pub const ENV: &'static str = "SVC_WEBHOOKS_HEADER_KEY";
    const STORED_NAME: &'static str = "webhooks.header_key";

    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        let unbound = UnboundKey::new(&CHACHA20_POLY1305, bytes)
            .map_err(|_| Error::internal("the webhook header key must be 32 bytes"))?;
        Ok(Self { key: std::sync::Arc::new(LessSafeKey::new(unbound)) })
    }

    pub fn from_hex(hex_key: &str) -> Result<Self, Error> {
        let bytes =
            hex::decode(hex_key.trim()).map_err(|_| Error::internal(format!("{} must be 64 hex digits", Self::ENV)))?;
        Self::from_bytes(&bytes)
    }

    /// The configured key, or the one this database keeps (made on first use, the same for
    /// every process sharing the database).
    pub async fn load(conn: &mut store::Conn, configured: Option<&str>) -> Result<Self, Error> {
        if let Some(hex_key) = configured {
            return Self::from_hex(hex_key);
        }
        Self::from_bytes(&store::service_key(conn, Self::STORED_NAME).await?)
    }

    /// Seals a value, bound to its header name so a sealed value cannot be moved to another.
    pub fn seal(&self, name: &str, value: &str) -> Result<Sealed, Error> {
        let mut nonce = [0_u8; NONCE_LEN];
        SystemRandom::new().fill(&mut nonce).map_err(|_| Error::internal("no randomness for a nonce"))?;
        let mut buf = value.as_bytes().to_vec();
        self.key
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), aad(name), &mut buf)
            .map_err(|_| Error::internal("sealing a header value failed"))?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&buf);
        Ok(Sealed { name: name.to_owned(), sealed: hex::encode(out) })
    }

    pub fn open(&self, sealed: &Sealed) -> Result<String, Error> {
        let broken = || Error::internal(format!("the stored value of header {} cannot be opened", sealed.name));
        let bytes = hex::decode(&sealed.sealed).map_err(|_| broken())?;
        if bytes.len() < NONCE_LEN {
            return Err(broken());
        }
        let (nonce, ciphertext) = bytes.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| broken())?;
        let mut buf = ciphertext.to_vec();
        let plain = self.key.open_in_place(nonce, aad(&sealed.name), &mut buf).map_err(|_| broken())?;
        String::from_utf8(plain.to_vec()).map_err(|_| broken())
    }
}

fn aad(name: &str) -> Aad<Vec<u8>> {
    Aad::from(name.to_ascii_lowercase().into_bytes())
}

/// The stored set after a request: every value given is sealed afresh; a name sent as null
/// keeps its stored value, which must exist.
pub fn apply(
    key: &HeaderKey,
    stored: &[Sealed],
    requested: Requested,
    errors: &mut FieldErrors,
) -> Result<Vec<Sealed>, Error> {
    let mut next = Vec::with_capacity(requested.len());
    for (name, value) in requested {
        match value {
            Some(value) => next.push(key.seal(&name, &value)?),
            None => match stored.iter().find(|s| s.name.eq_ignore_ascii_case(&name)) {
                // the stored value keeps the name's original spelling
                Some(kept) => next.push(Sealed { name: name.clone(), ..kept.clone() }),
                None => errors.add(format!("headers.{name}"), format!("{name} has no stored value to keep.")),
            },
        }
    }
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> HeaderKey {
        HeaderKey::from_bytes(&[7_u8; 32]).expect("sealing works")
    }

    #[test]
    fn sealed_values_open_only_under_their_own_name_and_key() {
        let sealed = key().seal("Authorization", "Bearer abc").expect("sealing works");
        assert!(!sealed.sealed.contains(&hex::encode("Bearer abc")));
        assert_eq!(key().open(&sealed).expect("sealing works"), "Bearer abc");
        // the name is bound (any case of it)
        assert_eq!(
            key().open(&Sealed { name: "authorization".into(), ..sealed.clone() }).expect("sealing works"),
            "Bearer abc"
        );
        assert!(key().open(&Sealed { name: "X-Other".into(), ..sealed.clone() }).is_err());
        assert!(HeaderKey::from_bytes(&[8_u8; 32]).expect("sealing works").open(&sealed).is_err());
        // two seals of one value differ (fresh nonce)
        assert_ne!(key().seal("Authorization", "Bearer abc").expect("sealing works").sealed, sealed.sealed);
    }

    #[test]
    fn the_contracts_names_are_refused_in_any_case() {
        for name in [
            "X-Signature",
            "x-signature-v2",
            "X-SIGNATURE-V3",
            "X-Event",
            "x-event-id",
            "X-Events",
            "X-Delivery-Id",
            "x-timestamp",
            "Content-Type",
            "content-length",
            "HOST",
            "User-Agent",
            "Transfer-Encoding",
            "Proxy-Authorization",
        ] {
            assert!(refused(name).is_some(), "{name} should be refused");
        }
        for name in ["Authorization", "X-Api-Key", "X-Tenant", "X-Deliveries"] {
            assert!(refused(name).is_none(), "{name} should be allowed");
        }
    }

    #[test]
    fn parse_checks_count_names_values_and_nulls() {
        let mut errors = FieldErrors::new();
        let raw = serde_json::json!({"a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "6"});
        parse(&raw, false, &mut errors);
        assert!(errors.into_map().contains_key("headers"));

        let mut errors = FieldErrors::new();
        let raw = serde_json::json!({"Bad Name": "x", "X-Ok": "line\r\nX-Injected: 1", "X-Null": null, "X-Num": 5});
        parse(&raw, false, &mut errors);
        let map = errors.into_map();
        for field in ["headers.Bad Name", "headers.X-Ok", "headers.X-Null", "headers.X-Num"] {
            assert!(map.contains_key(field), "{field} in {map:?}");
        }

        let mut errors = FieldErrors::new();
        let parsed = parse(&serde_json::json!({"X-Keep": null, "X-New": "v"}), true, &mut errors);
        assert!(errors.is_empty());
        assert_eq!(parsed.get("X-Keep"), Some(&None));
        assert_eq!(parsed.get("X-New"), Some(&Some("v".to_owned())));
    }

    #[test]
    fn apply_keeps_stored_values_for_nulls_and_refuses_unknown_ones() {
        let stored = vec![key().seal("X-Keep", "secret").expect("sealing works")];
        let mut errors = FieldErrors::new();
        let requested = Requested::from([("x-keep".to_owned(), None), ("X-New".to_owned(), Some("v".to_owned()))]);
        let next = apply(&key(), &stored, requested, &mut errors).expect("sealing works");
        assert!(errors.is_empty());
        assert_eq!(next.len(), 2);
        let kept = next.iter().find(|s| s.name == "x-keep").expect("sealing works");
        assert_eq!(key().open(kept).expect("sealing works"), "secret");

        let mut errors = FieldErrors::new();
        apply(&key(), &stored, Requested::from([("X-Missing".to_owned(), None)]), &mut errors).expect("sealing works");
        assert!(errors.into_map().contains_key("headers.X-Missing"));
    }
}
