//! Signing deliveries (contract: Events, Delivery). Every attempt is signed afresh, so a retry
//! hours later still passes the receiver's five-minute check:
//!
//! - `X-Signature`: hex HMAC-SHA256 of the raw body (kept unchanged for older receivers);
//! - `X-Signature-V2`: `sha256=` + hex HMAC-SHA256 over `<X-Timestamp>.<X-Delivery-Id>.<raw body>`.
//!
//! The key is the receiver's secret as issued at registration or rotation. [`verify`] is what
//! the docs show customers: constant-time comparison, timestamps older than five minutes
//! refused.

use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};

/// Receivers refuse a timestamp further than this from their clock (contract: Limits).
pub const TOLERANCE_SECONDS: i64 = 5 * 60;
/// Secrets look like `whsec_` and 64 hex characters (32 random bytes).
pub const SECRET_PREFIX: &str = "whsec_";

/// The signature headers of one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// `X-Timestamp`: Unix seconds.
    pub timestamp: i64,
    /// `X-Signature`.
    pub v1: String,
    /// `X-Signature-V2`.
    pub v2: String,
}

fn key(secret: &str) -> hmac::Key {
    hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes())
}

/// What `X-Signature-V2` signs.
fn v2_message(timestamp: i64, delivery_id: &str, body: &[u8]) -> Vec<u8> {
    let mut message = format!("{timestamp}.{delivery_id}.").into_bytes();
    message.extend_from_slice(body);
    message
}

/// Signs one attempt of a delivery.
pub fn sign(secret: &str, delivery_id: &str, timestamp: i64, body: &[u8]) -> Signature {
    let key = key(secret);
    let v1 = hex::encode(hmac::sign(&key, body).as_ref());
    let v2 = format!("sha256={}", hex::encode(hmac::sign(&key, &v2_message(timestamp, delivery_id, body)).as_ref()));
    Signature { timestamp, v1, v2 }
}

/// A fresh receiver secret, from the operating system's random source.
pub fn new_secret() -> Result<String, ring::error::Unspecified> {
    let mut bytes = [0u8; 32];
    SystemRandom::new().fill(&mut bytes)?;
    Ok(format!("{SECRET_PREFIX}{}", hex::encode(bytes)))
}

/// Why a delivery did not verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("the X-Timestamp header is not a number of seconds")]
    BadTimestamp,
    #[error("the timestamp is more than five minutes away from now")]
    Stale,
    #[error("the signature header is not sha256=<hex>")]
    BadSignature,
    #[error("the signature does not match")]
    Mismatch,
}

/// Checks `X-Signature-V2` the way a receiver should: over the raw bytes, in constant time,
/// refusing a timestamp more than five minutes from `now` (Unix seconds).
pub fn verify(
    secret: &str,
    delivery_id: &str,
    timestamp: &str,
    signature_v2: &str,
    body: &[u8],
    now: i64,
) -> Result<(), VerifyError> {
    let timestamp: i64 = timestamp.trim().parse().map_err(|_| VerifyError::BadTimestamp)?;
    if (now - timestamp).abs() > TOLERANCE_SECONDS {
        return Err(VerifyError::Stale);
    }
    let tag = signature_v2.trim().strip_prefix("sha256=").ok_or(VerifyError::BadSignature)?;
    let tag = hex::decode(tag).map_err(|_| VerifyError::BadSignature)?;
    hmac::verify(&key(secret), &v2_message(timestamp, delivery_id, body), &tag).map_err(|_| VerifyError::Mismatch)
}

/// Checks the older `X-Signature` (body only, no timestamp), in constant time.
pub fn verify_v1(secret: &str, signature: &str, body: &[u8]) -> Result<(), VerifyError> {
    let tag = hex::decode(signature.trim()).map_err(|_| VerifyError::BadSignature)?;
    hmac::verify(&key(secret), body, &tag).map_err(|_| VerifyError::Mismatch)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// HMAC-SHA256 built by hand from SHA-256 (RFC 2104), so the tests do not check ring's
    /// HMAC against itself.
    fn independent_hmac(key: &[u8], message: &[u8]) -> String {
        let sha = |data: &[u8]| ring::digest::digest(&ring::digest::SHA256, data).as_ref().to_vec();
        let mut block = [0u8; 64];
        if key.len() > 64 {
            block[..32].copy_from_slice(&sha(key));
        } else {
            block[..key.len()].copy_from_slice(key);
        }
        let inner: Vec<u8> = block.iter().map(|b| b ^ 0x36).chain(message.iter().copied()).collect();
        let outer: Vec<u8> = block.iter().map(|b| b ^ 0x5c).chain(sha(&inner)).collect();
        hex::encode(sha(&outer))
    }

    #[test]
    fn the_independent_hmac_matches_rfc_4231() {
        assert_eq!(
            independent_hmac(b"Jefe", b"what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn both_signatures_are_the_contracts_hmacs() {
        let body = br#"{"event":"message.sent","message_id":7}"#;
        let signature = sign("whsec_abc", "dlv_1", 1_700_000_000, body);
        assert_eq!(signature.timestamp, 1_700_000_000);
        assert_eq!(signature.v1, independent_hmac(b"whsec_abc", body));
        let signed = [b"1700000000.dlv_1.".as_slice(), body].concat();
        assert_eq!(signature.v2, format!("sha256={}", independent_hmac(b"whsec_abc", &signed)));
    }

    #[test]
    fn verify_accepts_a_fresh_signature_and_refuses_the_rest() {
        let body = b"{}";
        let s = sign("whsec_abc", "dlv_1", 1_000, body);
        assert_eq!(verify("whsec_abc", "dlv_1", "1000", &s.v2, body, 1_000 + TOLERANCE_SECONDS), Ok(()));
        assert_eq!(
            verify("whsec_abc", "dlv_1", "1000", &s.v2, body, 1_000 + TOLERANCE_SECONDS + 1),
            Err(VerifyError::Stale)
        );
        assert_eq!(verify("whsec_abc", "dlv_1", "x", &s.v2, body, 1_000), Err(VerifyError::BadTimestamp));
        assert_eq!(verify("whsec_xyz", "dlv_1", "1000", &s.v2, body, 1_000), Err(VerifyError::Mismatch));
        assert_eq!(verify("whsec_abc", "dlv_2", "1000", &s.v2, body, 1_000), Err(VerifyError::Mismatch));
        assert_eq!(verify("whsec_abc", "dlv_1", "1000", &s.v2, b"{ }", 1_000), Err(VerifyError::Mismatch));
        assert_eq!(verify("whsec_abc", "dlv_1", "1000", &s.v1, body, 1_000), Err(VerifyError::BadSignature));
        assert_eq!(verify_v1("whsec_abc", &s.v1, body), Ok(()));
        assert_eq!(verify_v1("whsec_abc", &s.v1, b"{ }"), Err(VerifyError::Mismatch));
    }

    #[test]
    fn secrets_are_prefixed_random_and_distinct() {
        let (a, b) = (new_secret().expect("secret"), new_secret().expect("secret"));
        assert!(a.starts_with(SECRET_PREFIX) && a.len() == SECRET_PREFIX.len() + 64, "{a}");
        assert_ne!(a, b);
    }

    proptest::proptest! {
        #[test]
        fn every_signature_verifies_and_a_flipped_byte_does_not(body in proptest::collection::vec(proptest::num::u8::ANY, 0..256), flip in 0usize..256) {
            let s = sign("whsec_p", "dlv_p", 50, &body);
            proptest::prop_assert_eq!(verify("whsec_p", "dlv_p", "50", &s.v2, &body, 60), Ok(()));
            if !body.is_empty() {
                let mut changed = body.clone();
                let i = flip % changed.len();
                changed[i] ^= 1;
                proptest::prop_assert_eq!(verify("whsec_p", "dlv_p", "50", &s.v2, &changed, 60), Err(VerifyError::Mismatch));
            }
        }
    }
}
