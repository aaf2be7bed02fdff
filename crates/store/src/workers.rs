//! Heartbeats of the processes that run jobs (table `workers`, global): a process writes its row
//! when it starts and touches it every beat, renewing at the same time the lease of every job
//! it holds. A process whose heartbeat stopped for a lease is dead: its jobs' leases have run out
//! (they are claimed again) and what it marked as its own (messages it was handing to a
//! provider) is taken back by whoever finds it (docs/operations.md, "Crash recovery").

use std::collections::HashMap;

use diesel::sql_types::{Array, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use kernel::Error;
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use crate::Conn;

/// How long the row of a process not seen any more is kept, for whoever investigates.
const KEEP_DEAD: Duration = Duration::days(1);

/// How often a process beats for a given lease: three beats per lease, so one slow or lost
/// beat never lets a lease run out under a living holder.
pub fn heartbeat_interval(lease: Duration) -> std::time::Duration {
    std::time::Duration::try_from(lease / 3)
        .unwrap_or(std::time::Duration::from_secs(1))
        .max(std::time::Duration::from_millis(100))
}

/// Writes (or refreshes) the row of process `id`, seen `now`.
pub async fn register(conn: &mut Conn, id: Uuid, now: OffsetDateTime) -> Result<(), Error> {
    diesel::sql_query(
        "INSERT INTO workers (id, host, pid, started_at, last_seen_at) VALUES ($1, $2, $3, $4, $4)
         ON CONFLICT (id) DO UPDATE SET last_seen_at = excluded.last_seen_at",
    )
    .bind::<SqlUuid, _>(id)
    .bind::<Nullable<Text>, _>(host())
    .bind::<Nullable<Integer>, _>(i32::try_from(std::process::id()).ok())
    .bind::<Timestamptz, _>(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// One beat of process `id`: it was seen `now`, and the jobs it is `running` (and still holds)
/// are leased until `now + lease`. Rows of processes gone for a day are swept on the way.
/// Answers how many leases were renewed.
pub async fn beat(
    conn: &mut Conn,
    id: Uuid,
    running: &[i64],
    now: OffsetDateTime,
    lease: Duration,
) -> Result<usize, Error> {
    register(conn, id, now).await?;
    let renewed = if running.is_empty() {
        0
    } else {
        diesel::sql_query(
            "UPDATE jobs SET locked_until = $3
             WHERE id = ANY($2) AND locked_by = $1 AND state = 'running' AND locked_until < $3",
        )
        .bind::<SqlUuid, _>(id)
        .bind::<Array<diesel::sql_types::BigInt>, _>(running)
        .bind::<Timestamptz, _>(now + lease)
        .execute(conn)
        .await?
    };
    diesel::sql_query("DELETE FROM workers WHERE last_seen_at < $1")
        .bind::<Timestamptz, _>(now - KEEP_DEAD)
        .execute(conn)
        .await?;
    Ok(renewed)
}

/// Removes the row of a process that stopped cleanly (after it handed back its jobs).
pub async fn forget(conn: &mut Conn, id: Uuid) -> Result<(), Error> {
    diesel::sql_query("DELETE FROM workers WHERE id = $1").bind::<SqlUuid, _>(id).execute(conn).await?;
    Ok(())
}

#[derive(diesel::QueryableByName)]
struct Seen {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Timestamptz)]
    last_seen_at: OffsetDateTime,
}

/// When each of `ids` was last seen; a process without a row (stopped, or never started) is
/// missing from the answer.
pub async fn last_seen(conn: &mut Conn, ids: &[Uuid]) -> Result<HashMap<Uuid, OffsetDateTime>, Error> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let rows: Vec<Seen> = diesel::sql_query("SELECT id, last_seen_at FROM workers WHERE id = ANY($1)")
        .bind::<Array<SqlUuid>, _>(ids)
        .get_results(conn)
        .await?;
    Ok(rows.into_iter().map(|r| (r.id, r.last_seen_at)).collect())
}

/// Whether a process last seen at `seen` (`None`: no row) counts as dead at `now`, when a
/// living one beats at least once per `dead_after`.
pub fn is_dead(seen: Option<OffsetDateTime>, now: OffsetDateTime, dead_after: Duration) -> bool {
    seen.is_none_or(|seen| seen + dead_after < now)
}

fn host() -> Option<String> {
    std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
}
