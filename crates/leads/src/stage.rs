//! The lead stage (contract: Lead stage) and `POST /leads/{lead}/stage`. Every stage rule is
//! here, in [`LeadStage`]: `new` first; `won`, `lost` and `unqualified` close a lead; `lost` and
//! `unqualified` need a reason; the stage operation moves a lead to any stage (reopening
//! included), while an upsert or a `PATCH` cannot move a won lead (`won_locked`).

use std::fmt;

use diesel::deserialize::{self, FromSql, FromSqlRow};
use diesel::expression::AsExpression;
use diesel::pg::{Pg, PgValue};
use diesel::prelude::*;
use diesel::serialize::{self, Output, ToSql};
use diesel::sql_types::Text;
use diesel_async::{AsyncConnection, RunQueryDsl};
use kernel::{Caller, Error, Permission};
use serde::{Deserialize, Serialize};
use serde_json::{Map, json};
use time::OffsetDateTime;
use utoipa::ToSchema;

use crate::LeadId;
use crate::lead::{self, Lead};
use crate::schema::leads;
use crate::service::LeadService;
use crate::timeline::{self, Activity, LeadEvent};

/// A lead's stage, stored and shown as its wire value (`new`, `won`...).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema, AsExpression, FromSqlRow,
)]
#[serde(rename_all = "snake_case")]
#[diesel(sql_type = Text)]
pub enum LeadStage {
    New,
    Contacted,
    Qualified,
    Opportunity,
    Won,
    Lost,
    Unqualified,
}

use LeadStage as S;

/// How a move is asked for: the stage operation moves any lead; an upsert or a `PATCH` (an
/// edit) cannot move a won one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    StageOperation,
    Edit,
}

/// The stages a way of asking may not leave (contract: a won lead's stage changes only through
/// the stage operation).
pub const LOCKED: &[(LeadStage, Via)] = &[(S::Won, Via::Edit)];

/// What a stage request does to a lead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// The lead is at that stage already.
    Stay,
    Move {
        from: LeadStage,
        to: LeadStage,
    },
}

/// A stage request the rules refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// A won lead asked to move by an upsert or a `PATCH` (409 `won_locked`).
    WonLocked,
    /// `lost` or `unqualified` without a reason (422 `reason_required`).
    ReasonRequired(LeadStage),
}

impl From<Refusal> for Error {
    fn from(refusal: Refusal) -> Self {
        match refusal {
            Refusal::WonLocked => {
                Error::conflict("This lead is won: change its stage through POST /leads/{lead}/stage.")
                    .with_reason("won_locked")
            }
            Refusal::ReasonRequired(stage) => {
                Error::field("reason", format!("A reason is required to mark a lead {stage}."))
                    .with_reason("reason_required")
            }
        }
    }
}

impl LeadStage {
    /// The contract's stages, in pipeline order.
    pub const ALL: [Self; 7] = [S::New, S::Contacted, S::Qualified, S::Opportunity, S::Won, S::Lost, S::Unqualified];

    /// The message of a value that is no stage.
    pub const INVALID: &str =
        "The stage must be one of new, contacted, qualified, opportunity, won, lost, unqualified.";

    /// The contract's wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            S::New => "new",
            S::Contacted => "contacted",
            S::Qualified => "qualified",
            S::Opportunity => "opportunity",
            S::Won => "won",
            S::Lost => "lost",
            S::Unqualified => "unqualified",
        }
    }

    /// As the record's `stage_label` shows it.
    pub fn label(self) -> &'static str {
        match self {
            S::New => "New",
            S::Contacted => "Contacted",
            S::Qualified => "Qualified",
            S::Opportunity => "Opportunity",
            S::Won => "Won",
            S::Lost => "Lost",
            S::Unqualified => "Unqualified",
        }
    }

    /// A stage as a client writes it: any case, spaces around.
    pub fn parse(raw: &str) -> Option<Self> {
        let raw = raw.trim();
        Self::ALL.into_iter().find(|stage| stage.as_str().eq_ignore_ascii_case(raw))
    }

    /// `won`, `lost` and `unqualified` close a lead.
    pub fn closes(self) -> bool {
        matches!(self, S::Won | S::Lost | S::Unqualified)
    }

    /// `lost` and `unqualified` need a reason, kept in `lost_reason`.
    pub fn needs_reason(self) -> bool {
        matches!(self, S::Lost | S::Unqualified)
    }

    /// The closing stages, for SQL `stage = ANY(...)`.
    pub fn closing() -> Vec<Self> {
        Self::ALL.into_iter().filter(|stage| stage.closes()).collect()
    }

    /// The stage of a new lead: `new` unless one is sent; a closing stage that needs a reason
    /// needs it from the start.
    pub fn start(sent: Option<Self>, reason: Option<&str>) -> Result<Self, Refusal> {
        let stage = sent.unwrap_or(S::New);
        if stage.needs_reason() && reason.is_none() {
            return Err(Refusal::ReasonRequired(stage));
        }
        Ok(stage)
    }

    /// Asking a lead at this stage to be at `to`. The stage operation checks the reason even
    /// when the lead is there already (a new reason replaces the kept one); an edit to the
    /// stage the lead has is no move at all.
    pub fn transition(self, to: Self, via: Via, reason: Option<&str>) -> Result<Transition, Refusal> {
        if via == Via::Edit && self == to {
            return Ok(Transition::Stay);
        }
        if LOCKED.contains(&(self, via)) && self != to {
            return Err(Refusal::WonLocked);
        }
        if to.needs_reason() && reason.is_none() {
            return Err(Refusal::ReasonRequired(to));
        }
        Ok(if self == to { Transition::Stay } else { Transition::Move { from: self, to } })
    }

    /// `closed_at` and `lost_reason` once a lead is at this stage: a closing stage keeps the
    /// time the lead closed (or closes it now), an open one clears it; the reason is kept only
    /// where the stage needs one.
    pub fn settle(
        self,
        closed_at: Option<OffsetDateTime>,
        reason: Option<String>,
        now: OffsetDateTime,
    ) -> (Option<OffsetDateTime>, Option<String>) {
        let closed_at = if self.closes() { closed_at.or(Some(now)) } else { None };
        (closed_at, reason.filter(|_| self.needs_reason()))
    }
}

impl fmt::Display for LeadStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ToSql<Text, Pg> for LeadStage {
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Pg>) -> serialize::Result {
        <str as ToSql<Text, Pg>>::to_sql(self.as_str(), out)
    }
}

impl FromSql<Text, Pg> for LeadStage {
    fn from_sql(bytes: PgValue<'_>) -> deserialize::Result<Self> {
        let raw = <String as FromSql<Text, Pg>>::from_sql(bytes)?;
        Self::ALL.into_iter().find(|stage| stage.as_str() == raw).ok_or_else(|| format!("no lead stage {raw:?}").into())
    }
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct StageChange {
    #[schema(required = true, schema_with = crate::doc::stage)]
    pub stage: Option<String>,
    /// Required with `lost` and `unqualified`; kept as `lost_reason`.
    pub reason: Option<String>,
}

impl LeadService {
    pub async fn set_stage(&self, caller: &Caller, id: LeadId, input: StageChange) -> Result<Lead, Error> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let actor = self.access(&mut conn, caller, Permission::LEADS_EDIT).await?;
        let Some(stage) = input.stage.as_deref().and_then(LeadStage::parse) else {
            return Err(Error::field("stage", LeadStage::INVALID).with_reason("invalid"));
        };
        let reason = input.reason.as_deref().map(str::trim).filter(|r| !r.is_empty()).map(str::to_owned);
        // the reason is checked before the lead is read: any lead may be moved here
        LeadStage::New.transition(stage, Via::StageOperation, reason.as_deref()).map_err(Error::from)?;
        let tenant = caller.tenant_id;
        let now = self.clock.now();
        conn.transaction::<_, Error, _>(async |conn| {
            let row = lead::locked(conn, tenant, id, &actor).await?;
            match row.stage.transition(stage, Via::StageOperation, reason.as_deref())? {
                // the same stage again with a new reason keeps the new reason
                Transition::Stay => {
                    if stage.needs_reason() && row.lost_reason != reason {
                        diesel::update(leads::table.filter(leads::tenant_id.eq(tenant)).filter(leads::id.eq(id)))
                            .set((leads::lost_reason.eq(&reason), leads::updated_at.eq(now)))
                            .execute(conn)
                            .await?;
                    }
                }
                Transition::Move { from, to } => {
                    let (closed_at, lost_reason) = to.settle(row.closed_at, reason.clone(), now);
                    diesel::update(leads::table.filter(leads::tenant_id.eq(tenant)).filter(leads::id.eq(id)))
                        .set((
                            leads::stage.eq(to),
                            leads::closed_at.eq(closed_at),
                            leads::lost_reason.eq(lost_reason),
                            leads::updated_at.eq(now),
                            leads::last_activity_at.eq(now),
                        ))
                        .execute(conn)
                        .await?;
                    let moved = lead::row(conn, tenant, id).await?;
                    let lead = lead::views(conn, vec![moved], &self.public_url, now)
                        .await?
                        .pop()
                        .ok_or_else(|| Error::not_found("Lead"))?;
                    let changes = moved_changes(from, to);
                    let activity = Activity {
                        kind: "stage_changed",
                        details: serde_json::Value::Object(changes.clone()),
                        reason: reason.as_deref(),
                    };
                    timeline::record(conn, tenant, id, &actor, &[activity], now).await?;
                    let event = LeadEvent {
                        name: "lead.stage_changed",
                        lead: &lead,
                        changes: Some(&changes),
                        reason: reason.as_deref(),
                        extra: Map::new(),
                    };
                    timeline::emit(conn, tenant, &actor, event, now).await?;
                }
            }
            let row = lead::row(conn, tenant, id).await?;
            lead::full(conn, row, &self.public_url, now).await
        })
        .await
    }
}

/// A move as `changes` (the activity's `details`, the event's `changes`) shows it.
pub(crate) fn moved_changes(from: LeadStage, to: LeadStage) -> Map<String, serde_json::Value> {
    Map::from_iter([("stage".to_owned(), json!({ "from": from, "to": to }))])
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    const NOW: OffsetDateTime = datetime!(2026-11-26 10:00 UTC);

    #[test]
    fn the_stage_operation_moves_any_stage_to_any_other_reopening_included() {
        for from in S::ALL {
            for to in S::ALL {
                let moved = from.transition(to, Via::StageOperation, Some("why"));
                let expected = if from == to { Transition::Stay } else { Transition::Move { from, to } };
                assert_eq!(moved, Ok(expected), "{from} -> {to}");
            }
        }
        assert_eq!(
            S::Won.transition(S::New, Via::StageOperation, None),
            Ok(Transition::Move { from: S::Won, to: S::New })
        );
    }

    #[test]
    fn an_edit_cannot_move_a_won_lead() {
        for to in S::ALL.into_iter().filter(|s| *s != S::Won) {
            assert_eq!(S::Won.transition(to, Via::Edit, Some("why")), Err(Refusal::WonLocked), "{to}");
        }
        assert_eq!(S::Won.transition(S::Won, Via::Edit, None), Ok(Transition::Stay), "the stage it has is no move");
        assert_eq!(S::Lost.transition(S::Won, Via::Edit, None), Ok(Transition::Move { from: S::Lost, to: S::Won }));
    }

    #[test]
    fn lost_and_unqualified_need_a_reason() {
        for to in [S::Lost, S::Unqualified] {
            assert_eq!(S::New.transition(to, Via::Edit, None), Err(Refusal::ReasonRequired(to)));
            assert_eq!(S::New.transition(to, Via::StageOperation, None), Err(Refusal::ReasonRequired(to)));
            assert_eq!(S::start(Some(to), None), Err(Refusal::ReasonRequired(to)));
            assert_eq!(S::start(Some(to), Some("no budget")), Ok(to));
        }
        // the stage operation asks for it again on the stage the lead has; an edit does not
        assert_eq!(S::Lost.transition(S::Lost, Via::StageOperation, None), Err(Refusal::ReasonRequired(S::Lost)));
        assert_eq!(S::Lost.transition(S::Lost, Via::Edit, None), Ok(Transition::Stay));
        let needing: Vec<_> = S::ALL.into_iter().filter(|s| s.needs_reason()).collect();
        assert_eq!(needing, [S::Lost, S::Unqualified]);
    }

    #[test]
    fn a_new_lead_starts_new_unless_a_stage_is_sent() {
        assert_eq!(S::start(None, None), Ok(S::New));
        assert_eq!(S::start(Some(S::Won), None), Ok(S::Won));
    }

    #[test]
    fn won_lost_and_unqualified_close_and_keep_the_time_they_closed() {
        assert_eq!(S::closing(), [S::Won, S::Lost, S::Unqualified]);
        let earlier = datetime!(2026-11-01 10:00 UTC);
        assert_eq!(S::Won.settle(None, Some("x".into()), NOW), (Some(NOW), None));
        assert_eq!(S::Lost.settle(Some(earlier), Some("x".into()), NOW), (Some(earlier), Some("x".into())));
        assert_eq!(S::Contacted.settle(Some(earlier), Some("x".into()), NOW), (None, None), "reopened");
    }

    #[test]
    fn wire_values_and_labels_round_trip() {
        for stage in S::ALL {
            assert_eq!(S::parse(stage.as_str()), Some(stage));
            assert_eq!(S::parse(&format!(" {} ", stage.label())), Some(stage), "any case, trimmed");
            assert_eq!(serde_json::to_value(stage).ok(), Some(json!(stage.as_str())));
        }
        assert_eq!(S::parse("dreaming"), None);
        assert_eq!(S::parse(""), None);
    }

    #[test]
    fn refusals_answer_the_contract_s_reasons() {
        let locked = Error::from(Refusal::WonLocked);
        assert_eq!((locked.kind, locked.reason.as_deref()), (kernel::ErrorKind::Conflict, Some("won_locked")));
        let required = Error::from(Refusal::ReasonRequired(S::Lost));
        assert_eq!(required.reason.as_deref(), Some("reason_required"));
        assert!(required.errors.contains_key("reason"), "{required:?}");
        assert!(required.message.contains("lost") || required.errors["reason"].iter().any(|m| m.contains("lost")));
    }
}
