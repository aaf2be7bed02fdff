//! What a step may do, each over the domain service its REST route calls (so the run's caller
//! needs the permissions that route needs), and how each is undone.
//!
//! | action | service | result | compensation |
//! | --- | --- | --- | --- |
//! | `create_lead` | `LeadService::upsert` (`POST /leads`) | the lead, with `created` | the lead deleted, when this step made it |
//! | `set_lead_stage` | `LeadService::set_stage` | the lead | the stage (and lost reason) it had put back |
//! | `write_record` | `DataService::create_record` | the record | the record deleted |
//! | `create_order` | `CommerceService::create_order` | the order | the order cancelled (its stock released) |
//! | `send_message` | `MessagingService::send` (`POST /sms/send`) | `{messages}` | none: a message sent is not unsent |

use commerce::{CatalogueId, OrderId};
use data_tables::{RecordId, RecordWrite, TableId};
use kernel::{Caller, Error};
use leads::LeadId;
use leads::stage::StageChange;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// The domain services steps act through.
#[derive(Clone)]
pub struct Steps {
    pub leads: leads::LeadService,
    pub data: data_tables::DataService,
    pub commerce: commerce::CommerceService,
    pub messaging: messaging::MessagingService,
}

/// A step's action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = OperationAction)]
pub enum Action {
    /// `with`: `POST /leads`' body (`phone` or `email`, `name`, `stage`...).
    CreateLead,
    /// `with`: `lead` (its id), `stage`, and `reason` for `lost` and `unqualified`.
    SetLeadStage,
    /// `with`: `table` (its id) and `data` (the values by column key).
    WriteRecord,
    /// `with`: `catalogue` (the shop's id) and `POST /catalogues/{catalogue}/orders`' body.
    CreateOrder,
    /// `with`: `POST /sms/send`'s body (`recipient`, `message`, `sender_id`...).
    SendMessage,
}

/// How a finished step is undone: what the step record keeps, so a run interrupted by a crash
/// is undone by whoever picks it up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Undo {
    DeleteLead { lead: LeadId },
    RestoreStage { lead: LeadId, stage: String, reason: Option<String> },
    DeleteRecord { table: TableId, record: RecordId },
    CancelOrder { order: OrderId },
}

/// A step done: its result (what later steps name) and how to undo it.
pub struct Done {
    pub result: Value,
    pub undo: Option<Undo>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SetStage {
    lead: LeadId,
    stage: Option<String>,
    reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteRecord {
    table: TableId,
    data: Option<Value>,
}

#[derive(Deserialize)]
struct CreateOrder {
    catalogue: CatalogueId,
    #[serde(flatten)]
    order: commerce::orders::NewOrder,
}

impl Action {
    pub fn name(self) -> &'static str {
        match self {
            Self::CreateLead => "create_lead",
            Self::SetLeadStage => "set_lead_stage",
            Self::WriteRecord => "write_record",
            Self::CreateOrder => "create_order",
            Self::SendMessage => "send_message",
        }
    }

    /// The `with` members a definition must give (the services check the rest).
    pub fn required(self) -> &'static [&'static str] {
        match self {
            Self::CreateLead | Self::SendMessage => &[],
            Self::SetLeadStage => &["lead", "stage"],
            Self::WriteRecord => &["table", "data"],
            Self::CreateOrder => &["catalogue"],
        }
    }

    /// Runs the action as `caller` with its filled-in arguments.
    pub async fn run(self, steps: &Steps, caller: &Caller, args: Value) -> Result<Done, Error> {
        match self {
            Self::CreateLead => {
                let upserted = match steps.leads.upsert(caller, read(args)?, None).await? {
                    store::idempotency::Answer::Done(upserted) => upserted,
                    store::idempotency::Answer::Replay(_) => return Err(Error::internal("a replay without a key")),
                };
                let undo = upserted.created.then_some(Undo::DeleteLead { lead: upserted.lead.id });
                let mut result = to_value(&upserted.lead)?;
                result["created"] = Value::Bool(upserted.created);
                Ok(Done { result, undo })
            }
            Self::SetLeadStage => {
                let SetStage { lead, stage, reason } = read(args)?;
                let before = steps.leads.get(caller, lead).await?;
                let after = steps.leads.set_stage(caller, lead, StageChange { stage, reason }).await?;
                let undo = (before.stage != after.stage || before.lost_reason != after.lost_reason).then(|| {
                    Undo::RestoreStage { lead, stage: before.stage.as_str().to_owned(), reason: before.lost_reason }
                });
                Ok(Done { result: to_value(&after)?, undo })
            }
            Self::WriteRecord => {
                let WriteRecord { table, data } = read(args)?;
                let record = steps.data.create_record(caller, table, &RecordWrite { data }).await?;
                let undo = Some(Undo::DeleteRecord { table, record: RecordId(record.id) });
                Ok(Done { result: to_value(&record)?, undo })
            }
            Self::CreateOrder => {
                let CreateOrder { catalogue, order } = read(args)?;
                let order = match steps.commerce.create_order(caller, catalogue, order, None).await? {
                    store::idempotency::Answer::Done(order) => order,
                    store::idempotency::Answer::Replay(_) => return Err(Error::internal("a replay without a key")),
                };
                let undo = Some(Undo::CancelOrder { order: OrderId(order.id) });
                Ok(Done { result: to_value(&order)?, undo })
            }
            Self::SendMessage => {
                let sent = steps.messaging.send(caller, read(args)?).await?;
                Ok(Done { result: to_value(&sent)?, undo: None })
            }
        }
    }
}

impl Undo {
    /// Undoes a finished step, as the workspace's operator (a compensation puts back what the
    /// run did, whatever the run's caller may do). Already undone counts as undone.
    pub async fn run(&self, steps: &Steps, operator: &Caller) -> Result<(), Error> {
        let gone = |result: Result<(), Error>| match result {
            Err(e) if e.is(kernel::ErrorKind::NotFound) => Ok(()),
            other => other,
        };
        match self {
            Self::DeleteLead { lead } => gone(steps.leads.delete(operator, *lead).await.map(drop)),
            Self::RestoreStage { lead, stage, reason } => {
                let change = StageChange { stage: Some(stage.clone()), reason: reason.clone() };
                gone(steps.leads.set_stage(operator, *lead, change).await.map(drop))
            }
            Self::DeleteRecord { table, record } => gone(steps.data.delete_record(operator, *table, *record).await),
            Self::CancelOrder { order } => {
                let order = steps.commerce.get_order(operator, *order).await?;
                if order.status == "cancelled" {
                    return Ok(());
                }
                let change = commerce::orders::StatusChange { status: "cancelled".into() };
                gone(steps.commerce.set_order_status(operator, OrderId(order.id), change).await.map(drop))
            }
        }
    }
}

/// The arguments as the action's body: 422 naming `with` when they are not.
fn read<T: DeserializeOwned>(args: Value) -> Result<T, Error> {
    serde_json::from_value(args).map_err(|e| Error::field("with", format!("The step's arguments do not fit: {e}.")))
}

fn to_value(value: &impl Serialize) -> Result<Value, Error> {
    serde_json::to_value(value).map_err(Error::internal)
}
