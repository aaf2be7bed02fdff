//! What webhooks keeps sealed (`store::secrets`): each receiver's signing secret and its
//! custom header values; and the pass that re-seals them under the current key.

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::Error;
use serde_json::Value;
use store::secrets::Keyring;

use crate::WebhookService;
use crate::headers::{self, Sealed};
use crate::schema::webhooks;

/// The context a signing secret is sealed for.
pub const SECRET: &str = "webhook secret";
/// Receivers re-sealed per transaction.
const BATCH: i64 = 200;

/// A stored signing secret, opened; one from before secrets were sealed is in clear
/// (`whsec_…`) until the next re-seal.
pub fn open_secret(keyring: &Keyring, stored: &str) -> Result<String, Error> {
    if Keyring::is_sealed(stored) { keyring.open(SECRET, stored) } else { Ok(stored.to_owned()) }
}

/// Whether a receiver's stored values are all sealed under the current key.
fn current(keyring: &Keyring, secret: &str, sealed: &[Sealed]) -> bool {
    keyring.is_current(secret) && sealed.iter().all(|h| keyring.is_current(&h.sealed))
}

impl WebhookService {
    /// Re-seals every receiver's secret and header values that are not under the current key
    /// (older keys, the bare form of earlier versions, secrets in clear), a batch of receivers
    /// per transaction. Idempotent: what is current is left alone, so a run cut short is
    /// finished by running it again. Answers how many receivers changed; a value no key opens
    /// stops the run with the receiver's id.
    pub async fn reseal(&self) -> Result<u64, Error> {
        let mut after = 0_i64;
        let mut changed = 0_u64;
        loop {
            let mut conn = self.system_conn().await?;
            let keyring = &self.keyring;
            let (last, count) = conn
                .transaction::<_, Error, _>(async |conn| {
                    let rows: Vec<(i64, String, Value)> = webhooks::table
                        .filter(webhooks::id.gt(after))
                        .order(webhooks::id)
                        .limit(BATCH)
                        .select((webhooks::id, webhooks::secret, webhooks::headers))
                        .for_update()
                        .load(conn)
                        .await?;
                    let mut count = 0_u64;
                    for (id, secret, raw) in &rows {
                        let sealed: Vec<Sealed> = serde_json::from_value(raw.clone()).unwrap_or_default();
                        if current(keyring, secret, &sealed) {
                            continue;
                        }
                        let cannot = |e: Error| Error::internal(format!("webhook {id}: {}", e.message));
                        let secret = keyring.seal(SECRET, &open_secret(keyring, secret).map_err(cannot)?)?;
                        let sealed = sealed
                            .iter()
                            .map(|h| headers::seal(keyring, &h.name, &headers::open(keyring, h).map_err(cannot)?))
                            .collect::<Result<Vec<_>, Error>>()?;
                        diesel::update(webhooks::table.filter(webhooks::id.eq(id)))
                            .set((
                                webhooks::secret.eq(secret),
                                webhooks::headers.eq(serde_json::to_value(&sealed).map_err(Error::internal)?),
                            ))
                            .execute(conn)
                            .await?;
                        count += 1;
                    }
                    Ok((rows.last().map(|r| r.0), count))
                })
                .await?;
            changed += count;
            match last {
                Some(last) => after = last,
                None => return Ok(changed),
            }
        }
    }
}

/// Where an attempt goes, with its secret and header values opened. When one cannot be opened
/// (the key that sealed it is not configured) the attempt is not made: the answer is the
/// reason to record, and the operator's log says which key is missing. The attempt is retried
/// on schedule, as the operator may restore the key.
pub(crate) fn target(
    keyring: &Keyring,
    webhook_id: i64,
    url: String,
    secret: &str,
    sealed: &[Sealed],
    legacy_http: bool,
) -> Result<crate::attempt::Target, String> {
    let opened = open_secret(keyring, secret).and_then(|secret| {
        let headers =
            sealed.iter().map(|h| Ok((h.name.clone(), headers::open(keyring, h)?))).collect::<Result<_, Error>>()?;
        Ok((secret, headers))
    });
    match opened {
        Ok((secret, headers)) => Ok(crate::attempt::Target { url, secret, headers, legacy_http }),
        Err(e) => {
            tracing::error!(webhook_id, error = %e.message, "a webhook's sealed values cannot be opened");
            Err(format!(
                "the signing secret or a custom header cannot be opened: is the key that sealed it in {}?",
                store::secrets::SecretsConfig::OLD_KEYS_ENV
            ))
        }
    }
}
