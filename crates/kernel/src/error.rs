//! The one error type that crosses crate borders (house rule 4). The gateway maps each
//! [`ErrorKind`] to a status and the envelope of the route family; internal causes are
//! logged, never sent.

use std::collections::BTreeMap;

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// 422: bad keys, values or structure.
    Validation,
    /// 401: missing, unknown, revoked, expired or wrong-kind credentials.
    Unauthenticated,
    /// 403: permission, ownership, issuer or account-status refusal.
    Forbidden,
    /// 404: unknown or another tenant's resource.
    NotFound,
    /// 409: state or uniqueness conflict.
    Conflict,
    /// 402: the prepaid balance cannot pay for the request.
    PaymentRequired,
    /// 429: too many requests.
    RateLimited,
    /// 502: an outside system refused or failed.
    ProviderFailure,
    /// 503: try again later.
    Unavailable,
    /// 501: a known operation this resource does not support (a filter operator a column
    /// type does not advertise, a sort that needs an index).
    NotSupported,
    /// 500: a bug or a broken dependency; the message stays in the log.
    Internal,
}

impl ErrorKind {
    /// The machine-readable code of the data, payments and MCP error families.
    pub fn code(self) -> &'static str {
        match self {
            Self::Validation => "validation_error",
            Self::Conflict => "conflict",
            Self::NotFound => "not_found",
            Self::Forbidden | Self::Unauthenticated => "permission_denied",
            Self::PaymentRequired => "quota_exceeded",
            Self::NotSupported => "not_supported",
            Self::RateLimited => "rate_limited",
            Self::ProviderFailure => "provider_failure",
            Self::Unavailable => "temporary_failure",
            Self::Internal => "internal_error",
        }
    }

    /// Whether trying the same request again later may succeed.
    pub fn retryable(self) -> bool {
        matches!(self, Self::RateLimited | Self::ProviderFailure | Self::Unavailable)
    }
}

/// Boxed, so a `Result<T, Error>` stays as small as `T` plus a pointer on the happy path.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{:?}: {}", .0.kind, .0.message)]
pub struct Error(Box<Details>);

/// What an [`Error`] says; read through the error (`error.kind`, `error.errors`).
#[derive(Debug, Clone)]
pub struct Details {
    pub kind: ErrorKind,
    pub message: String,
    /// Field errors, `{field: [message]}` as the v3 envelope shows them.
    pub errors: BTreeMap<String, Vec<String>>,
    /// A machine-readable reason (the leads refusals, data error codes).
    pub reason: Option<String>,
    /// Extra top-level members of the error body (e.g. `count` on a refused group delete).
    pub details: serde_json::Map<String, serde_json::Value>,
}

impl std::ops::Deref for Error {
    type Target = Details;

    fn deref(&self) -> &Details {
        &self.0
    }
}

impl std::ops::DerefMut for Error {
    fn deref_mut(&mut self) -> &mut Details {
        &mut self.0
    }
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self(Box::new(Details {
            kind,
            message: message.into(),
            errors: BTreeMap::new(),
            reason: None,
            details: serde_json::Map::new(),
        }))
    }

    /// The details, owned.
    pub fn into_details(self) -> Details {
        *self.0
    }

    /// A 422 naming one field.
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        let message = message.into();
        Self::new(ErrorKind::Validation, message.clone()).with_field(field, message)
    }

    /// A 422 with the field errors collected by a validator; the message is the first one.
    pub fn fields(errors: BTreeMap<String, Vec<String>>) -> Self {
        let message = errors
            .values()
            .flat_map(|v| v.first())
            .next()
            .cloned()
            .unwrap_or_else(|| "The given data was invalid.".to_owned());
        let mut error = Self::new(ErrorKind::Validation, message);
        error.errors = errors;
        error
    }

    pub fn validation(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Validation, message)
    }

    pub fn not_found(what: impl std::fmt::Display) -> Self {
        Self::new(ErrorKind::NotFound, format!("{what} not found."))
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Conflict, message)
    }

    pub fn payment_required(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::PaymentRequired, message)
    }

    pub fn not_supported(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotSupported, message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Forbidden, message)
    }

    pub fn unauthenticated(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unauthenticated, message)
    }

    /// A 500 whose cause is logged here and never sent to the caller.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        let message = cause.to_string();
        Self::new(ErrorKind::Internal, message)
    }

    /// A 503: the database (or another part the service cannot work without) is out of reach
    /// for now. The cause is logged here; the caller is told to try again shortly, with
    /// `retry_after_seconds` (and a `Retry-After` header).
    pub fn unavailable(cause: impl std::fmt::Display) -> Self {
        static LOG: Throttle = Throttle::new();
        let second = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        if let Some(left_out) = LOG.admit(second) {
            tracing::warn!(%cause, left_out, "unavailable");
        }
        Self::new(ErrorKind::Unavailable, "The service is briefly unavailable; try again in a few seconds.")
            .with_detail(RETRY_AFTER, RETRY_AFTER_SECONDS)
    }

    pub fn with_field(mut self, field: impl Into<String>, message: impl Into<String>) -> Self {
        self.errors.entry(field.into()).or_default().push(message.into());
        self
    }

    pub fn with_reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }

    pub fn with_detail(mut self, key: &str, value: impl Into<serde_json::Value>) -> Self {
        self.details.insert(key.to_owned(), value.into());
        self
    }

    pub fn is(&self, kind: ErrorKind) -> bool {
        self.kind == kind
    }
}

/// Collects field errors while validating a body, so a caller sees every problem at once.
#[derive(Debug, Default)]
pub struct FieldErrors(BTreeMap<String, Vec<String>>);

impl FieldErrors {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.0.entry(field.into()).or_default().push(message.into());
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn contains(&self, field: &str) -> bool {
        self.0.contains_key(field)
    }

    pub fn into_map(self) -> BTreeMap<String, Vec<String>> {
        self.0
    }

    /// `Ok(())` when nothing was collected, else one 422 with every field error.
    pub fn finish(self) -> Result<()> {
        if self.0.is_empty() { Ok(()) } else { Err(Error::fields(self.0)) }
    }
}

/// The detail a 503 carries: seconds until trying again is worth it (also `Retry-After`).
pub const RETRY_AFTER: &str = "retry_after_seconds";
const RETRY_AFTER_SECONDS: u64 = 2;

/// Database failures are internal unless a domain matched them first (a unique violation it
/// expected, a row it looked up); `NotFound` keeps its meaning, and a database that went away
/// (stopped, restarting, the connection cut) is a 503 to try again, not a bug.
impl From<diesel::result::Error> for Error {
    fn from(error: diesel::result::Error) -> Self {
        use diesel::result::{DatabaseErrorKind, Error as Diesel};
        match error {
            Diesel::NotFound => Self::new(ErrorKind::NotFound, "Not found."),
            Diesel::DatabaseError(DatabaseErrorKind::ClosedConnection | DatabaseErrorKind::UnableToSendCommand, _) => {
                Self::unavailable(format!("database: {error}"))
            }
            Diesel::DatabaseError(_, ref info) if is_going_away(info.message()) => {
                Self::unavailable(format!("database: {error}"))
            }
            other => Self::internal(format!("database: {other}")),
        }
    }
}

/// PostgreSQL's messages for a server that is stopping, starting or recovering (SQLSTATE class
/// 57P and 08; diesel does not pass the code on, so the server's own words are matched).
fn is_going_away(message: &str) -> bool {
    const GOING_AWAY: [&str; 6] = [
        "terminating connection due to administrator command",
        "terminating connection because of crash of another server process",
        "the database system is shutting down",
        "the database system is starting up",
        "the database system is in recovery mode",
        "the database system is not yet accepting connections",
    ];
    GOING_AWAY.iter().any(|words| message.starts_with(words))
}

/// At most one log line a second: during an outage every request is a 503, and one warning
/// per request would flood the log. The line that is written says how many it left out.
struct Throttle {
    second: std::sync::atomic::AtomicU64,
    quiet: std::sync::atomic::AtomicU64,
}

impl Throttle {
    const fn new() -> Self {
        Self { second: std::sync::atomic::AtomicU64::new(0), quiet: std::sync::atomic::AtomicU64::new(0) }
    }

    /// `Some(lines left out since the last one)` when a line may be written in `second`.
    fn admit(&self, second: u64) -> Option<u64> {
        use std::sync::atomic::Ordering::Relaxed;
        let last = self.second.load(Relaxed);
        if second != last && self.second.compare_exchange(last, second, Relaxed, Relaxed).is_ok() {
            return Some(self.quiet.swap(0, Relaxed));
        }
        self.quiet.fetch_add(1, Relaxed);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use diesel::result::{DatabaseErrorKind, Error as Diesel};

    fn database(kind: DatabaseErrorKind, message: &str) -> Error {
        Diesel::DatabaseError(kind, Box::new(message.to_owned())).into()
    }

    #[test]
    fn a_database_that_went_away_is_a_503_to_retry() {
        for error in [
            database(DatabaseErrorKind::UnableToSendCommand, "connection closed"),
            database(DatabaseErrorKind::ClosedConnection, "server closed the connection unexpectedly"),
            database(DatabaseErrorKind::Unknown, "terminating connection due to administrator command"),
            database(DatabaseErrorKind::Unknown, "the database system is starting up"),
        ] {
            assert_eq!(error.kind, ErrorKind::Unavailable, "{error}");
            assert_eq!(error.details[RETRY_AFTER], 2);
            assert!(!error.message.contains("connection"), "the cause stays in the log: {}", error.message);
        }
    }

    #[test]
    fn other_database_failures_stay_internal() {
        let error = database(DatabaseErrorKind::Unknown, "column \"x\" does not exist");
        assert_eq!(error.kind, ErrorKind::Internal);
        assert_eq!(Error::from(Diesel::NotFound).kind, ErrorKind::NotFound);
    }

    #[test]
    fn unavailable_is_logged_once_a_second_with_the_count_left_out() {
        let throttle = Throttle::new();
        assert_eq!(throttle.admit(100), Some(0));
        for _ in 0..41 {
            assert_eq!(throttle.admit(100), None);
        }
        assert_eq!(throttle.admit(101), Some(41));
        assert_eq!(throttle.admit(101), None);
        assert_eq!(throttle.admit(105), Some(1));
    }
}
