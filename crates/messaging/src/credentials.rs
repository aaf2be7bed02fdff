//! A channel's provider credentials, sealed at rest (`store::secrets`): the whole object is
//! sealed as one value and stored as a JSON string in `channels.credentials`, opened only to
//! build the provider client.

use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::Error;
use serde_json::Value;
use store::secrets::Keyring;

use crate::schema::channels;

/// The context credentials are sealed for.
const CONTEXT: &str = "channel credentials";
/// Channels re-sealed per transaction.
const BATCH: i64 = 200;

/// The stored form of `clear`.
pub fn seal(keyring: &Keyring, clear: &Value) -> Result<Value, Error> {
    Ok(Value::String(keyring.seal(CONTEXT, &clear.to_string())?))
}

/// The credentials of a stored value: sealed, or (an object) stored in clear before they were
/// sealed, until the next re-seal.
pub fn open(keyring: &Keyring, stored: &Value) -> Result<Value, Error> {
    match stored {
        Value::String(sealed) => serde_json::from_str(&keyring.open(CONTEXT, sealed)?)
            .map_err(|_| Error::internal("sealed channel credentials are not an object")),
        clear => Ok(clear.clone()),
    }
}

/// Re-seals every channel's credentials not sealed under the current key (older keys, or
/// still in clear), a batch per transaction. Idempotent, so a run cut short is finished by
/// running it again. Answers how many channels changed; credentials no key opens stop the run
/// with the channel's id.
pub async fn reseal(pool: &store::Pool, keyring: &Keyring) -> Result<u64, Error> {
    let mut after = 0_i64;
    let mut changed = 0_u64;
    loop {
        let mut conn = store::connect_global(pool).await?;
        let (last, count) = conn
            .transaction::<_, Error, _>(async |conn| {
                let rows: Vec<(i64, Value)> = channels::table
                    .filter(channels::id.gt(after))
                    .order(channels::id)
                    .limit(BATCH)
                    .select((channels::id, channels::credentials))
                    .for_update()
                    .load(conn)
                    .await?;
                let mut count = 0_u64;
                for (id, stored) in &rows {
                    if stored.as_str().is_some_and(|s| keyring.is_current(s)) {
                        continue;
                    }
                    let clear =
                        open(keyring, stored).map_err(|e| Error::internal(format!("channel {id}: {}", e.message)))?;
                    diesel::update(channels::table.find(id))
                        .set(channels::credentials.eq(seal(keyring, &clear)?))
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
