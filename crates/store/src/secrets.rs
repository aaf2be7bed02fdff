//! Secrets at rest: the one sealing primitive every domain uses (ChaCha20-Poly1305, ring's
//! AEAD). A [`Keyring`] holds the current key, which seals, and older keys, which only open;
//! a sealed value names its key (`v1:<key id>:<hex of nonce, ciphertext and tag>`), so values
//! sealed before a rotation still open until `gateway admin secrets rotate` re-seals them.
//!
//! Each value is bound to a context (what it is: `webhooks.secret`, a header's name...), so a
//! sealed value copied into another column does not open there.

use std::sync::Arc;

use kernel::Error;
use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};

use crate::Conn;

/// Every sealed value starts with this.
pub const PREFIX: &str = "v1:";
/// The key kept in `service_keys` when none is configured.
const STORED_NAME: &str = "secrets.key";
/// The webhook header key of earlier versions, still read (never made) as an old key.
const LEGACY_STORED_NAME: &str = "webhooks.header_key";

/// What the configuration says: 64 hex digits each (docs/operations.md, "Secrets at rest").
#[derive(Clone, Default)]
pub struct SecretsConfig {
    /// Seals every new value (`SVC_SECRETS_KEY`); none: a key kept in the database.
    pub current: Option<String>,
    /// Open only (`SVC_SECRETS_OLD_KEYS`): values sealed before a rotation.
    pub old: Vec<String>,
}

impl std::fmt::Debug for SecretsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretsConfig")
            .field("current", &self.current.as_ref().map(|_| "..."))
            .field("old", &self.old.len())
            .finish()
    }
}

impl SecretsConfig {
    pub const KEY_ENV: &'static str = "SVC_SECRETS_KEY";
    pub const OLD_KEYS_ENV: &'static str = "SVC_SECRETS_OLD_KEYS";
    /// The webhook header key's variable before issue 15: read as `SVC_SECRETS_KEY` when that
    /// is unset, and as an old key when both are set.
    pub const LEGACY_KEY_ENV: &'static str = "SVC_WEBHOOKS_HEADER_KEY";

    /// Reads the three variables through `var`, checking every key's shape.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let mut old: Vec<String> = var(Self::OLD_KEYS_ENV)
            .map(|raw| raw.split([',', ' ']).filter(|k| !k.is_empty()).map(str::to_owned).collect())
            .unwrap_or_default();
        let current = match (var(Self::KEY_ENV), var(Self::LEGACY_KEY_ENV)) {
            (Some(current), Some(legacy)) => {
                old.push(legacy);
                Some(current)
            }
            (current, legacy) => current.or(legacy),
        };
        for key in current.iter().chain(&old) {
            if decode(key).is_none() {
                return Err(format!("{} and {} take keys of 64 hex digits", Self::KEY_ENV, Self::OLD_KEYS_ENV));
            }
        }
        Ok(Self { current, old })
    }
}

fn decode(hex_key: &str) -> Option<Vec<u8>> {
    hex::decode(hex_key.trim()).ok().filter(|bytes| bytes.len() == 32)
}

struct Key {
    /// The first 8 hex digits of the key's SHA-256: names the key without revealing it.
    id: String,
    aead: LessSafeKey,
}

impl Key {
    fn new(bytes: &[u8]) -> Result<Self, Error> {
        let unbound = UnboundKey::new(&CHACHA20_POLY1305, bytes)
            .map_err(|_| Error::internal("a secrets key must be 32 bytes"))?;
        let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
        Ok(Self { id: hex::encode(&digest.as_ref()[..4]), aead: LessSafeKey::new(unbound) })
    }

    fn open(&self, context: &str, bytes: &[u8]) -> Option<String> {
        let (nonce, ciphertext) = bytes.split_at_checked(NONCE_LEN)?;
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut buf = ciphertext.to_vec();
        let plain = self.aead.open_in_place(nonce, aad(context), &mut buf).ok()?;
        String::from_utf8(plain.to_vec()).ok()
    }
}

fn aad(context: &str) -> Aad<Vec<u8>> {
    Aad::from(context.as_bytes().to_vec())
}

/// The current key and the old ones. Cheap to clone; its `Debug` shows key ids only.
#[derive(Clone)]
pub struct Keyring {
    keys: Arc<Vec<Key>>,
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keyring").field("key_ids", &self.keys.iter().map(|k| &k.id).collect::<Vec<_>>()).finish()
    }
}

impl Keyring {
    /// `current` seals; `old` keys only open. Each is 32 bytes.
    pub fn new(current: &[u8], old: &[&[u8]]) -> Result<Self, Error> {
        let mut keys = vec![Key::new(current)?];
        for bytes in old {
            let key = Key::new(bytes)?;
            if keys.iter().all(|k| k.id != key.id) {
                keys.push(key);
            }
        }
        Ok(Self { keys: Arc::new(keys) })
    }

    /// The configured keys. With no current key configured, the key this database keeps (made
    /// on first use, the same for every process sharing the database). A kept key, and the
    /// webhook header key of earlier versions, are also read as old keys when one is
    /// configured, so moving to a configured key is a rotation like any other.
    pub async fn load(conn: &mut Conn, config: &SecretsConfig) -> Result<Self, Error> {
        let bad = || Error::internal(format!("{} must be 64 hex digits", SecretsConfig::KEY_ENV));
        let mut stored = stored_keys(conn).await?;
        let current = match &config.current {
            Some(hex_key) => decode(hex_key).ok_or_else(bad)?,
            None => crate::service_key(conn, STORED_NAME).await?,
        };
        let mut old = config.old.iter().map(|k| decode(k).ok_or_else(bad)).collect::<Result<Vec<_>, _>>()?;
        old.append(&mut stored);
        Self::new(&current, &old.iter().map(Vec::as_slice).collect::<Vec<_>>())
    }

    /// The id of the key that seals.
    pub fn current_id(&self) -> &str {
        &self.keys[0].id
    }

    /// Seals `clear` for `context` under the current key, with a fresh nonce.
    pub fn seal(&self, context: &str, clear: &str) -> Result<String, Error> {
        let key = &self.keys[0];
        let mut nonce = [0_u8; NONCE_LEN];
        SystemRandom::new().fill(&mut nonce).map_err(|_| Error::internal("no randomness for a nonce"))?;
        let mut buf = clear.as_bytes().to_vec();
        key.aead
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), aad(context), &mut buf)
            .map_err(|_| Error::internal("sealing a secret failed"))?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&buf);
        Ok(format!("{PREFIX}{}:{}", key.id, hex::encode(out)))
    }

    /// Opens a value sealed for `context` under any key of the ring. An unknown key, a damaged
    /// value or another context is an internal error that names the key id, never the value.
    pub fn open(&self, context: &str, sealed: &str) -> Result<String, Error> {
        let broken = || Error::internal(format!("a sealed {context} cannot be opened: it is damaged or not sealed"));
        let rest = sealed.strip_prefix(PREFIX).ok_or_else(broken)?;
        let (id, hex_value) = rest.split_once(':').ok_or_else(broken)?;
        let key = self.keys.iter().find(|k| k.id == id).ok_or_else(|| {
            Error::internal(format!(
                "a sealed {context} is under key {id}, which is not configured (add it to {})",
                SecretsConfig::OLD_KEYS_ENV
            ))
        })?;
        let bytes = hex::decode(hex_value).map_err(|_| broken())?;
        key.open(context, &bytes).ok_or_else(broken)
    }

    /// Opens a value sealed before key ids (bare hex, the webhook headers of earlier
    /// versions) with whichever key of the ring sealed it.
    pub fn open_unnamed(&self, context: &str, hex_value: &str) -> Result<String, Error> {
        let bytes = hex::decode(hex_value)
            .map_err(|_| Error::internal(format!("a sealed {context} cannot be opened: it is damaged")))?;
        self.keys
            .iter()
            .find_map(|k| k.open(context, &bytes))
            .ok_or_else(|| Error::internal(format!("a sealed {context} cannot be opened with any configured key")))
    }

    /// Whether `value` is sealed under the current key: rotation leaves it alone.
    pub fn is_current(&self, value: &str) -> bool {
        value.strip_prefix(PREFIX).and_then(|rest| rest.split_once(':')).is_some_and(|(id, _)| id == self.current_id())
    }

    /// Whether `value` is sealed at all (under any key).
    pub fn is_sealed(value: &str) -> bool {
        value.starts_with(PREFIX)
    }
}

/// The keys this database keeps (the current one when nothing is configured, the webhook
/// header key of earlier versions), read without making any.
async fn stored_keys(conn: &mut Conn) -> Result<Vec<Vec<u8>>, Error> {
    use diesel::sql_types::{Array, Bytea, Text};
    use diesel_async::RunQueryDsl;

    #[derive(diesel::QueryableByName)]
    struct Stored {
        #[diesel(sql_type = Bytea)]
        key: Vec<u8>,
    }
    let rows: Vec<Stored> = diesel::sql_query("SELECT key FROM service_keys WHERE name = ANY($1) ORDER BY name")
        .bind::<Array<Text>, _>(vec![STORED_NAME, LEGACY_STORED_NAME])
        .load(conn)
        .await?;
    Ok(rows.into_iter().map(|r| r.key).collect())
}

/// Forgets the keys this database keeps, once every value is sealed under a configured key
/// (the last step of moving to one: a key kept beside the data protects nothing from whoever
/// reads the data). Answers how many were dropped.
pub async fn forget_stored_keys(conn: &mut Conn) -> Result<usize, Error> {
    use diesel::sql_types::{Array, Text};
    use diesel_async::RunQueryDsl;

    Ok(diesel::sql_query("DELETE FROM service_keys WHERE name = ANY($1)")
        .bind::<Array<Text>, _>(vec![STORED_NAME, LEGACY_STORED_NAME])
        .execute(conn)
        .await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(current: u8, old: &[u8]) -> Keyring {
        let old: Vec<[u8; 32]> = old.iter().map(|b| [*b; 32]).collect();
        Keyring::new(&[current; 32], &old.iter().map(|k| k.as_slice()).collect::<Vec<_>>()).expect("keys")
    }

    #[test]
    fn a_value_opens_under_its_key_and_context_only() {
        let a = ring(1, &[]);
        let sealed = a.seal("webhooks.secret", "whsec_abc").expect("seal");
        assert!(sealed.starts_with(&format!("v1:{}:", a.current_id())), "{sealed}");
        assert!(!sealed.contains("whsec_abc") && !sealed.contains(&hex::encode("whsec_abc")));
        assert_eq!(a.open("webhooks.secret", &sealed).expect("open"), "whsec_abc");
        assert!(a.open("channels.credentials", &sealed).is_err(), "another context");
        assert_ne!(a.seal("webhooks.secret", "whsec_abc").expect("seal"), sealed, "a fresh nonce");
        assert!(a.is_current(&sealed) && Keyring::is_sealed(&sealed));
    }

    #[test]
    fn after_a_rotation_old_values_open_until_their_key_is_dropped() {
        let a = ring(1, &[]);
        let sealed = a.seal("ctx", "clear").expect("seal");
        // B current, A old: the value opens, and is not current
        let b_with_a = ring(2, &[1]);
        assert_eq!(b_with_a.open("ctx", &sealed).expect("open"), "clear");
        assert!(!b_with_a.is_current(&sealed));
        let resealed = b_with_a.seal("ctx", &b_with_a.open("ctx", &sealed).expect("open")).expect("seal");
        // A dropped: the re-sealed value opens, the old one fails naming its key
        let b = ring(2, &[]);
        assert_eq!(b.open("ctx", &resealed).expect("open"), "clear");
        let err = b.open("ctx", &sealed).expect_err("unknown key");
        assert!(err.message.contains(a.current_id()) && err.message.contains("not configured"), "{}", err.message);
        assert!(!err.message.contains("clear"));
    }

    #[test]
    fn damaged_values_fail_without_panicking() {
        let a = ring(1, &[]);
        let id = a.current_id().to_owned();
        for bad in ["", "v1:", "v1:nope", &format!("v1:{id}:zz"), &format!("v1:{id}:00"), "whsec_clear"] {
            assert!(a.open("ctx", bad).is_err(), "{bad:?}");
        }
        assert!(a.open_unnamed("ctx", "00ff").is_err());
    }

    #[test]
    fn configuration_reads_the_alias_and_checks_every_key() {
        let (k1, k2, k3) = ("11".repeat(32), "22".repeat(32), "33".repeat(32));
        let vars = |pairs: Vec<(&'static str, String)>| {
            move |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone())
        };
        let only_legacy = SecretsConfig::from_vars(vars(vec![("SVC_WEBHOOKS_HEADER_KEY", k1.clone())])).expect("ok");
        assert_eq!((only_legacy.current.as_deref(), only_legacy.old.len()), (Some(k1.as_str()), 0));
        let both = SecretsConfig::from_vars(vars(vec![
            ("SVC_SECRETS_KEY", k2.clone()),
            ("SVC_SECRETS_OLD_KEYS", k3.clone()),
            ("SVC_WEBHOOKS_HEADER_KEY", k1.clone()),
        ]))
        .expect("ok");
        assert_eq!(both.current.as_deref(), Some(k2.as_str()));
        assert_eq!(both.old, vec![k3, k1]);
        assert!(SecretsConfig::from_vars(vars(vec![("SVC_SECRETS_OLD_KEYS", "abc".into())])).is_err());
        assert!(!format!("{both:?}").contains(&k2), "Debug hides the keys");
    }
}
