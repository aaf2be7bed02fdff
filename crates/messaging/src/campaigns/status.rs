//! The campaign state machine (contract: States and transitions — Campaign status), one table
//! that both [`CampaignStatus::apply`] and the SQL guards ([`CampaignEvent::sources`]) read.
//! The column stores the wire value; diesel reads and writes the enum directly.

use std::fmt;

use diesel::deserialize::{self, FromSql, FromSqlRow};
use diesel::expression::AsExpression;
use diesel::pg::{Pg, PgValue};
use diesel::serialize::{self, Output, ToSql};
use diesel::sql_types::Text;

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    utoipa::ToSchema,
    AsExpression,
    FromSqlRow,
)]
#[serde(rename_all = "snake_case")]
#[diesel(sql_type = Text)]
pub enum CampaignStatus {
    /// Created, dispatch not started yet.
    Draft,
    /// Created with a `schedule_time` in the future.
    Scheduled,
    Running,
    /// The prepaid balance could not pay for the next batch.
    Paused,
    Completed,
    Cancelled,
}

/// What happens to a campaign; each event has exactly one target status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CampaignEvent {
    /// Its dispatch chain writes the first batch (contract: draft/scheduled -> running).
    Start,
    /// The wallet cannot pay for the next batch (contract: running -> paused).
    Pause,
    /// Resumed through the API, or a paused campaign's next batch is paid for.
    Resume,
    /// Every recipient's message has been dispatched (contract: running -> completed).
    Complete,
    /// Cancelled through the API, no usable route, or its group was deleted (contract: any
    /// unfinished -> cancelled).
    Cancel,
}

use CampaignEvent as E;
use CampaignStatus as S;

/// Every allowed transition: (from, event, to). Creation writes `draft`, `scheduled` or (no
/// route) `cancelled`; that is an insertion, not a transition.
pub const TRANSITIONS: &[(CampaignStatus, CampaignEvent, CampaignStatus)] = &[
    (S::Draft, E::Start, S::Running),
    (S::Scheduled, E::Start, S::Running),
    (S::Running, E::Pause, S::Paused),
    (S::Paused, E::Resume, S::Running),
    (S::Running, E::Complete, S::Completed),
    (S::Draft, E::Cancel, S::Cancelled),
    (S::Scheduled, E::Cancel, S::Cancelled),
    (S::Running, E::Cancel, S::Cancelled),
    (S::Paused, E::Cancel, S::Cancelled),
];

impl CampaignStatus {
    pub const ALL: [Self; 6] = [S::Draft, S::Scheduled, S::Running, S::Paused, S::Completed, S::Cancelled];

    /// The contract's wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            S::Draft => "draft",
            S::Scheduled => "scheduled",
            S::Running => "running",
            S::Paused => "paused",
            S::Completed => "completed",
            S::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.as_str() == s)
    }

    /// No event leaves it: `completed` and `cancelled`; its dispatch chain stops.
    pub fn is_final(self) -> bool {
        !TRANSITIONS.iter().any(|&(from, _, _)| from == self)
    }

    pub fn apply(self, event: CampaignEvent) -> Result<CampaignStatus, IllegalTransition> {
        TRANSITIONS
            .iter()
            .find(|&&(from, on, _)| from == self && on == event)
            .map(|&(_, _, to)| to)
            .ok_or(IllegalTransition { from: self, event })
    }
}

impl fmt::Display for CampaignStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ToSql<Text, Pg> for CampaignStatus {
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Pg>) -> serialize::Result {
        <str as ToSql<Text, Pg>>::to_sql(self.as_str(), out)
    }
}

impl FromSql<Text, Pg> for CampaignStatus {
    fn from_sql(bytes: PgValue<'_>) -> deserialize::Result<Self> {
        let raw = <String as FromSql<Text, Pg>>::from_sql(bytes)?;
        Self::parse(&raw).ok_or_else(|| format!("unknown campaign status {raw:?}").into())
    }
}

impl CampaignEvent {
    pub const ALL: [Self; 5] = [E::Start, E::Pause, E::Resume, E::Complete, E::Cancel];

    pub fn target(self) -> CampaignStatus {
        match self {
            E::Start | E::Resume => S::Running,
            E::Pause => S::Paused,
            E::Complete => S::Completed,
            E::Cancel => S::Cancelled,
        }
    }

    /// The statuses this event may leave: for SQL `WHERE status = ANY(...)`, so the database
    /// applies the same table under concurrency.
    pub fn sources(self) -> Vec<CampaignStatus> {
        TRANSITIONS.iter().filter(|&&(_, on, _)| on == self).map(|&(from, _, _)| from).collect()
    }
}

/// An event the campaign's current status does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IllegalTransition {
    pub from: CampaignStatus,
    pub event: CampaignEvent,
}

impl fmt::Display for IllegalTransition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a {} campaign cannot take the {:?} event", self.from, self.event)
    }
}

impl std::error::Error for IllegalTransition {}

impl From<IllegalTransition> for kernel::Error {
    fn from(error: IllegalTransition) -> Self {
        kernel::Error::internal(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test per row of the contract's Campaign status table.

    #[test]
    fn draft_dispatch_starts_running() {
        assert_eq!(S::Draft.apply(E::Start), Ok(S::Running));
    }

    #[test]
    fn scheduled_dispatch_starts_running() {
        assert_eq!(S::Scheduled.apply(E::Start), Ok(S::Running));
    }

    #[test]
    fn running_balance_short_paused() {
        assert_eq!(S::Running.apply(E::Pause), Ok(S::Paused));
    }

    #[test]
    fn paused_resume_or_paid_running() {
        assert_eq!(S::Paused.apply(E::Resume), Ok(S::Running));
    }

    #[test]
    fn running_all_dispatched_completed() {
        assert_eq!(S::Running.apply(E::Complete), Ok(S::Completed));
    }

    #[test]
    fn any_unfinished_cancel_cancelled() {
        for from in [S::Draft, S::Scheduled, S::Running, S::Paused] {
            assert_eq!(from.apply(E::Cancel), Ok(S::Cancelled), "{from}");
        }
    }

    #[test]
    fn finished_campaigns_take_no_event() {
        for from in [S::Completed, S::Cancelled] {
            for event in E::ALL {
                assert_eq!(from.apply(event), Err(IllegalTransition { from, event }));
            }
        }
    }

    #[test]
    fn only_paused_resumes() {
        for from in S::ALL {
            assert_eq!(from.apply(E::Resume).is_ok(), from == S::Paused, "{from}");
        }
    }

    #[test]
    fn a_paused_or_unstarted_campaign_does_not_complete() {
        for from in [S::Draft, S::Scheduled, S::Paused] {
            assert!(from.apply(E::Complete).is_err(), "{from}");
        }
    }

    #[test]
    fn every_pair_outside_the_table_is_refused() {
        for from in S::ALL {
            for event in E::ALL {
                let row = TRANSITIONS.iter().find(|&&(f, e, _)| f == from && e == event);
                match row {
                    Some(&(_, _, to)) => assert_eq!(from.apply(event), Ok(to)),
                    None => assert_eq!(from.apply(event), Err(IllegalTransition { from, event })),
                }
            }
        }
    }

    #[test]
    fn each_event_has_exactly_one_target() {
        for &(from, event, to) in TRANSITIONS {
            assert_eq!(to, event.target(), "{from} {event:?}");
        }
        for event in E::ALL {
            assert!(TRANSITIONS.iter().any(|&(_, e, _)| e == event), "{event:?} is in no row");
        }
    }

    #[test]
    fn no_duplicate_rows() {
        for (i, &(from, event, _)) in TRANSITIONS.iter().enumerate() {
            assert!(!TRANSITIONS[i + 1..].iter().any(|&(f, e, _)| f == from && e == event));
        }
    }

    #[test]
    fn final_statuses_are_completed_and_cancelled() {
        let finals: Vec<_> = S::ALL.into_iter().filter(|s| s.is_final()).collect();
        assert_eq!(finals, [S::Completed, S::Cancelled]);
    }

    #[test]
    fn sources_list_the_rows_of_the_event() {
        assert_eq!(E::Start.sources(), [S::Draft, S::Scheduled]);
        assert_eq!(E::Complete.sources(), [S::Running]);
        assert_eq!(E::Cancel.sources(), [S::Draft, S::Scheduled, S::Running, S::Paused]);
    }

    #[test]
    fn wire_values_round_trip() {
        for status in S::ALL {
            assert_eq!(S::parse(status.as_str()), Some(status));
            assert_eq!(serde_json::to_value(status).ok(), Some(serde_json::json!(status.as_str())));
        }
        assert_eq!(S::parse("Running"), None);
        assert_eq!(S::parse("failed"), None);
    }

    #[test]
    fn illegal_transition_says_what_was_refused() {
        let err = S::Completed.apply(E::Resume).err();
        assert_eq!(err.map(|e| e.to_string()).as_deref(), Some("a completed campaign cannot take the Resume event"));
    }
}
