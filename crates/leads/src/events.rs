//! The samples of the lead events in `GET /webhooks/events`, made by the code that builds the
//! delivered payloads (`timeline::payload`), so a sample cannot drift from a delivery.

use kernel::UserId;
use serde_json::{Map, Value, json};
use time::macros::datetime;
use uuid::{Uuid, uuid};

use crate::lead::{Assignee, CreatedBy, Label, Lead};
use crate::service::Actor;
use crate::timeline::{LeadEvent, payload};
use crate::{LabelId, LeadId, LeadStage};

const LEAD_ID: Uuid = uuid!("5d6e7f80-91a2-4b3c-8d4e-5f6a7b8c9d0e");

fn wholesale() -> Label {
    Label { id: LabelId(14), name: "Wholesale".into(), color: "#2E7D32".into() }
}

/// A qualified lead of a café, as of the event.
fn sample_lead() -> Lead {
    Lead {
        id: LeadId(LEAD_ID),
        name: Some("Amina Juma".into()),
        title: Some("Owner".into()),
        company: Some("Amina Café".into()),
        phone: Some("+255712345678".into()),
        email: Some("amina@aminacafe.co.tz".into()),
        location: Some("Kariakoo, Dar es Salaam".into()),
        stage: LeadStage::Qualified,
        stage_label: LeadStage::Qualified.label().into(),
        closed: false,
        archived: false,
        closed_at: None,
        archived_at: None,
        lost_reason: None,
        labels: vec![wholesale()],
        interest: Some("Monthly supply of ground coffee for a café".into()),
        estimated_value: Some(400_000.0),
        currency: "TZS".into(),
        score: Some(72),
        score_reason: Some("Asked for wholesale prices and gave a monthly volume.".into()),
        summary: Some("Café owner in Kariakoo looking for 20 kg of coffee a month.".into()),
        source_channel: Some("api".into()),
        source_detail: None,
        assigned_to: Some(Assignee { id: 31, name: "Neema Mushi".into() }),
        next_action: Some("Send the wholesale price list".into()),
        next_action_at: Some(datetime!(2026-11-27 07:00 UTC)),
        overdue: false,
        created_by: CreatedBy { kind: "api".into(), id: Some(31) },
        last_activity_at: datetime!(2026-11-26 09:29:10 UTC),
        created_at: datetime!(2026-11-26 08:52:03 UTC),
        updated_at: datetime!(2026-11-26 09:29:10 UTC),
        sources: json!([{ "kind": "api", "id": null, "channel": null, "at": "2026-11-26T08:52:03Z" }]),
        custom_fields: json!({ "monthly_kg": 20 }),
        url: format!("https://app.example.com/leads/{LEAD_ID}"),
        identities: None,
        possible_duplicate: None,
    }
}

fn changes(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// One sample per lead event the service emits.
pub fn samples() -> Vec<(&'static str, Value)> {
    let actor = Actor { user: Some(UserId(31)), label: "Neema Mushi".into(), sees_all: true, may_create_labels: true };
    let lead = sample_lead();
    let created = Lead {
        stage: LeadStage::New,
        stage_label: LeadStage::New.label().into(),
        labels: vec![],
        estimated_value: Some(250_000.0),
        score: Some(40),
        assigned_to: None,
        next_action: None,
        next_action_at: None,
        last_activity_at: lead.created_at,
        updated_at: lead.created_at,
        ..sample_lead()
    };
    let unlabelled = Lead { labels: vec![], ..sample_lead() };
    let updated = changes(json!({
        "email": { "from": null, "to": "amina@aminacafe.co.tz" },
        "estimated_value": { "from": 250_000, "to": 400_000 }
    }));
    let staged = crate::stage::moved_changes(LeadStage::Contacted, LeadStage::Qualified);
    let assigned = changes(json!({ "assigned_to": { "from": null, "to": { "id": 31, "name": "Neema Mushi" } } }));
    let label = || Map::from_iter([("label".to_owned(), json!(wholesale()))]);
    let note = Map::from_iter([(
        "note".to_owned(),
        json!({
            "id": "e1f2a3b4-c5d6-4e7f-8a9b-0c1d2e3f4a5b",
            "body": "Prefers delivery on Mondays before 9 am.",
            "created_at": "2026-11-26T09:29:10Z"
        }),
    )]);
    let events = [
        LeadEvent { name: "lead.created", lead: &created, changes: None, reason: None, extra: Map::new() },
        LeadEvent { name: "lead.updated", lead: &lead, changes: Some(&updated), reason: None, extra: Map::new() },
        LeadEvent {
            name: "lead.stage_changed",
            lead: &lead,
            changes: Some(&staged),
            reason: Some("Confirmed a monthly budget."),
            extra: Map::new(),
        },
        LeadEvent { name: "lead.label_added", lead: &lead, changes: None, reason: None, extra: label() },
        LeadEvent { name: "lead.label_removed", lead: &unlabelled, changes: None, reason: None, extra: label() },
        LeadEvent { name: "lead.note_added", lead: &lead, changes: None, reason: None, extra: note },
        LeadEvent { name: "lead.assigned", lead: &lead, changes: Some(&assigned), reason: None, extra: Map::new() },
        LeadEvent { name: "lead.deleted", lead: &lead, changes: None, reason: None, extra: Map::new() },
    ];
    events
        .into_iter()
        .filter_map(|event| {
            let name = event.name;
            payload(&actor, event).ok().map(|payload| (name, payload))
        })
        .collect()
}
