//! The campaign state machine (contract: States and transitions — Campaign status), one table
//! that both [`CampaignStatus::apply`] and the SQL guards ([`CampaignEvent::sources`]) read.
//! The column stores the wire value; diesel reads and writes the enum directly
//! (`kernel::wire_text!`).

use diesel::deserialize::FromSqlRow;
use diesel::expression::AsExpression;
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

impl kernel::state::Status for CampaignStatus {
    type Event = CampaignEvent;
    const ALL: &'static [Self] = &[S::Draft, S::Scheduled, S::Running, S::Paused, S::Completed, S::Cancelled];

    /// The contract's wire value.
    fn as_str(self) -> &'static str {
        match self {
            S::Draft => "draft",
            S::Scheduled => "scheduled",
            S::Running => "running",
            S::Paused => "paused",
            S::Completed => "completed",
            S::Cancelled => "cancelled",
        }
    }
}

kernel::wire_text!(CampaignStatus);

impl kernel::state::Event for CampaignEvent {
    type Status = CampaignStatus;
    const ALL: &'static [Self] = &[E::Start, E::Pause, E::Resume, E::Complete, E::Cancel];
    const TRANSITIONS: &'static [(CampaignStatus, CampaignEvent, CampaignStatus)] = TRANSITIONS;
}

/// An event the campaign's current status does not allow.
pub type IllegalTransition = kernel::state::IllegalTransition<CampaignStatus, CampaignEvent>;

#[cfg(test)]
mod tests {
    use kernel::state::{Event as _, Status as _};

    use super::*;

    #[test]
    fn the_table_keeps_the_rules_of_every_table() {
        kernel::state::check::<S>();
    }

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
            for &event in E::ALL {
                assert_eq!(from.apply(event), Err(IllegalTransition { from, event }));
            }
        }
    }

    #[test]
    fn only_paused_resumes() {
        for &from in S::ALL {
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
    fn final_statuses_are_completed_and_cancelled() {
        let finals: Vec<_> = S::ALL.iter().copied().filter(|s| s.is_final()).collect();
        assert_eq!(finals, [S::Completed, S::Cancelled]);
    }

    #[test]
    fn sources_list_the_rows_of_the_event() {
        assert_eq!(E::Start.sources(), ["draft", "scheduled"]);
        assert_eq!(E::Complete.sources(), ["running"]);
        assert_eq!(E::Cancel.sources(), ["draft", "scheduled", "running", "paused"]);
    }

    #[test]
    fn wire_values_round_trip() {
        for &status in S::ALL {
            assert_eq!(S::parse(status.as_str()), Some(status));
            assert_eq!(serde_json::to_value(status).ok(), Some(serde_json::json!(status.as_str())));
        }
        assert_eq!(S::parse("Running"), None);
        assert_eq!(S::parse("failed"), None);
    }

    #[test]
    fn illegal_transition_says_what_was_refused() {
        let err = S::Completed.apply(E::Resume).err();
        assert_eq!(err.map(|e| e.to_string()).as_deref(), Some("completed cannot take the Resume event"));
    }
}
