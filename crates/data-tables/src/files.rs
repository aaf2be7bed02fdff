//! Files a `file` column refers to. The contract has no upload endpoint: files are stored by
//! the platform (the admin CLI here, forms and MCP later) and records name them by id. Reads
//! return signed, expiring URLs that the gateway serves without a key.

use diesel::sql_types::{Array, BigInt, Bytea, Text, Timestamptz, Uuid as SqlUuid};
use diesel::{OptionalExtension, QueryableByName};
use diesel_async::RunQueryDsl;
use kernel::{Error, Result, TenantId};
use ring::hmac;
use serde::Serialize;
use time::{Duration, OffsetDateTime};
use uuid::Uuid;

use crate::DataService;

/// How long a signed URL works.
pub const URL_LIFETIME: Duration = Duration::hours(1);
/// The largest file the service keeps.
pub const MAX_BYTES: usize = 10 * 1024 * 1024;
const KEY_NAME: &str = "data.files";

/// A file as a record shows it.
#[derive(Debug, Clone, Serialize)]
pub struct FileDescriptor {
    pub id: Uuid,
    pub name: String,
    pub mime_type: String,
    pub size: i64,
    pub url: String,
    #[serde(with = "time::serde::rfc3339")]
    pub url_expires_at: OffsetDateTime,
}

#[derive(QueryableByName)]
pub(crate) struct FileRow {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = Text)]
    pub mime_type: String,
    #[diesel(sql_type = BigInt)]
    pub size: i64,
}

/// A file's bytes, for the download route.
pub struct Download {
    pub name: String,
    pub mime_type: String,
    pub content: Vec<u8>,
}

#[derive(QueryableByName)]
struct Content {
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Text)]
    mime_type: String,
    #[diesel(sql_type = Bytea)]
    content: Vec<u8>,
}

impl DataService {
    /// Stores a file for `tenant`; its id is what a `file` column takes.
    pub async fn store_file(&self, tenant: TenantId, name: &str, mime_type: &str, bytes: Vec<u8>) -> Result<Uuid> {
        let name = name.trim();
        if name.is_empty() || name.len() > 255 {
            return Err(Error::field("name", "A file name is 1 to 255 characters."));
        }
        if bytes.len() > MAX_BYTES {
            return Err(Error::field("file", format!("A file is at most {MAX_BYTES} bytes.")));
        }
        let id = Uuid::now_v7();
        let mut conn = self.conn(tenant).await?;
        diesel::sql_query(
            "INSERT INTO data_files (id, tenant_id, name, mime_type, size, content, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind::<SqlUuid, _>(id)
        .bind::<BigInt, _>(tenant.0)
        .bind::<Text, _>(name)
        .bind::<Text, _>(mime_type)
        .bind::<BigInt, _>(bytes.len() as i64)
        .bind::<Bytea, _>(bytes)
        .bind::<Timestamptz, _>(self.clock.now())
        .execute(&mut conn)
        .await?;
        Ok(id)
    }

    async fn file_key(&self, conn: &mut store::Conn) -> Result<hmac::Key> {
        let bytes = match self.file_key.get() {
            Some(bytes) => bytes.clone(),
            None => {
                let bytes = store::service_key(conn, KEY_NAME).await?;
                self.file_key.get_or_init(|| bytes).clone()
            }
        };
        Ok(hmac::Key::new(hmac::HMAC_SHA256, &bytes))
    }

    /// Descriptors of the tenant's files among `ids`, with URLs valid for [`URL_LIFETIME`].
    pub(crate) async fn describe_files(
        &self,
        conn: &mut store::Conn,
        tenant: TenantId,
        ids: &[Uuid],
    ) -> Result<Vec<FileDescriptor>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let rows: Vec<FileRow> =
            diesel::sql_query("SELECT id, name, mime_type, size FROM data_files WHERE tenant_id = $1 AND id = ANY($2)")
                .bind::<BigInt, _>(tenant.0)
                .bind::<Array<SqlUuid>, _>(ids)
                .get_results(conn)
                .await?;
        let key = self.file_key(conn).await?;
        let expires = (self.clock.now() + URL_LIFETIME).unix_timestamp();
        let url_expires_at = OffsetDateTime::from_unix_timestamp(expires).map_err(Error::internal)?;
        Ok(rows
            .into_iter()
            .map(|row| {
                let signature = hex::encode(hmac::sign(&key, signed(row.id, expires).as_bytes()));
                let url = format!("{}/files/{}?expires={expires}&signature={signature}", self.public_url, row.id);
                FileDescriptor {
                    id: row.id,
                    name: row.name,
                    mime_type: row.mime_type,
                    size: row.size,
                    url,
                    url_expires_at,
                }
            })
            .collect())
    }

    /// The file behind a signed URL: 403 when the signature is wrong or expired.
    pub async fn download(&self, id: &str, expires: &str, signature: &str) -> Result<Download> {
        let refused = || Error::forbidden("This file link is not valid or has expired.");
        let id = kernel::parse_id(id, "File")?;
        let expires: i64 = expires.parse().map_err(|_| refused())?;
        let signature = hex::decode(signature).map_err(|_| refused())?;
        // a signed link says which file, not whose: it is found across tenants
        let mut conn = self.system_conn().await?;
        let key = self.file_key(&mut conn).await?;
        hmac::verify(&key, signed(id, expires).as_bytes(), &signature).map_err(|_| refused())?;
        if self.clock.now().unix_timestamp() > expires {
            return Err(refused());
        }
        let file: Content = diesel::sql_query("SELECT name, mime_type, content FROM data_files WHERE id = $1")
            .bind::<SqlUuid, _>(id)
            .get_result(&mut conn)
            .await
            .optional()?
            .ok_or_else(|| Error::not_found("File"))?;
        Ok(Download { name: file.name, mime_type: file.mime_type, content: file.content })
    }
}

fn signed(id: Uuid, expires: i64) -> String {
    format!("{id}.{expires}")
}

/// The ids among `ids` that are not files of `tenant`.
pub(crate) async fn missing(conn: &mut store::Conn, tenant: TenantId, ids: &[Uuid]) -> Result<Vec<Uuid>> {
    #[derive(QueryableByName)]
    struct Found {
        #[diesel(sql_type = SqlUuid)]
        id: Uuid,
    }
    let found: Vec<Found> = diesel::sql_query("SELECT id FROM data_files WHERE tenant_id = $1 AND id = ANY($2)")
        .bind::<BigInt, _>(tenant.0)
        .bind::<Array<SqlUuid>, _>(ids)
        .get_results(conn)
        .await?;
    Ok(ids.iter().filter(|id| !found.iter().any(|f| f.id == **id)).copied().collect())
}
