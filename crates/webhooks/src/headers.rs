//! A receiver's custom headers: names checked against the ones the service sets itself, values
//! sealed with the service's keyring (`store::secrets`) and opened only to send them.

use std::collections::BTreeMap;

use kernel::Error;
use kernel::error::FieldErrors;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::secrets::Keyring;

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
    /// `store::secrets`' sealed form (bare hex before key ids).
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

/// Seals a value, bound to its header name (any case) so it cannot be moved to another.
pub fn seal(keyring: &Keyring, name: &str, value: &str) -> Result<Sealed, Error> {
    Ok(Sealed { name: name.to_owned(), sealed: keyring.seal(&context(name), value)? })
}

/// Opens a stored value: sealed with a key id, or (bare hex) by the header key of earlier
/// versions, which bound it to the lower-case name alone.
pub fn open(keyring: &Keyring, sealed: &Sealed) -> Result<String, Error> {
    if Keyring::is_sealed(&sealed.sealed) {
        keyring.open(&context(&sealed.name), &sealed.sealed)
    } else {
        keyring.open_unnamed(&sealed.name.to_ascii_lowercase(), &sealed.sealed)
    }
}

fn context(name: &str) -> String {
    format!("webhook header {}", name.to_ascii_lowercase())
}

/// The stored set after a request: every value given is sealed afresh; a name sent as null
/// keeps its stored value, which must exist.
pub fn apply(
    keyring: &Keyring,
    stored: &[Sealed],
    requested: Requested,
    errors: &mut FieldErrors,
) -> Result<Vec<Sealed>, Error> {
    let mut next = Vec::with_capacity(requested.len());
    for (name, value) in requested {
        match value {
            Some(value) => next.push(seal(keyring, &name, &value)?),
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

    fn key() -> Keyring {
        Keyring::new(&[7_u8; 32], &[]).expect("sealing works")
    }

    #[test]
    fn sealed_values_open_only_under_their_own_name_and_key() {
        let sealed = seal(&key(), "Authorization", "Bearer abc").expect("sealing works");
        assert!(!sealed.sealed.contains("Bearer abc") && !sealed.sealed.contains(&hex::encode("Bearer abc")));
        assert_eq!(open(&key(), &sealed).expect("sealing works"), "Bearer abc");
        // the name is bound (any case of it)
        assert_eq!(
            open(&key(), &Sealed { name: "authorization".into(), ..sealed.clone() }).expect("sealing works"),
            "Bearer abc"
        );
        assert!(open(&key(), &Sealed { name: "X-Other".into(), ..sealed.clone() }).is_err());
        assert!(open(&Keyring::new(&[8_u8; 32], &[]).expect("sealing works"), &sealed).is_err());
        // two seals of one value differ (fresh nonce)
        assert_ne!(seal(&key(), "Authorization", "Bearer abc").expect("sealing works").sealed, sealed.sealed);
    }

    #[test]
    fn values_sealed_before_key_ids_still_open() {
        // the form of earlier versions: hex of nonce, ciphertext and tag, bound to the name
        use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};
        let legacy = LessSafeKey::new(UnboundKey::new(&CHACHA20_POLY1305, &[7_u8; 32]).expect("key"));
        let nonce = [3_u8; 12];
        let mut buf = b"Bearer old".to_vec();
        legacy
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(b"x-token".to_vec()), &mut buf)
            .expect("seal");
        let sealed = Sealed { name: "X-Token".into(), sealed: hex::encode([nonce.as_slice(), &buf].concat()) };
        // under a new current key with the old one kept
        let ring = Keyring::new(&[9_u8; 32], &[&[7_u8; 32]]).expect("keys");
        assert_eq!(open(&ring, &sealed).expect("opens"), "Bearer old");
        assert!(open(&Keyring::new(&[9_u8; 32], &[]).expect("keys"), &sealed).is_err());
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
        let stored = vec![seal(&key(), "X-Keep", "secret").expect("sealing works")];
        let mut errors = FieldErrors::new();
        let requested = Requested::from([("x-keep".to_owned(), None), ("X-New".to_owned(), Some("v".to_owned()))]);
        let next = apply(&key(), &stored, requested, &mut errors).expect("sealing works");
        assert!(errors.is_empty());
        assert_eq!(next.len(), 2);
        let kept = next.iter().find(|s| s.name == "x-keep").expect("sealing works");
        assert_eq!(open(&key(), kept).expect("sealing works"), "secret");

        let mut errors = FieldErrors::new();
        apply(&key(), &stored, Requested::from([("X-Missing".to_owned(), None)]), &mut errors).expect("sealing works");
        assert!(errors.into_map().contains_key("headers.X-Missing"));
    }
}
