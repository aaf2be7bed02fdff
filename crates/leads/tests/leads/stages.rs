//! The stage rules through the service: the stage operation moves and reopens; an edit cannot
//! move a won lead; `lost` needs a reason.

use kernel::ErrorKind;
use leads::LeadStage;
use leads::ops::LeadPatch;
use leads::stage::StageChange;
use serde_json::json;

use crate::common::*;

fn to(stage: &str, reason: Option<&str>) -> StageChange {
    StageChange { stage: Some(stage.to_owned()), reason: reason.map(str::to_owned) }
}

fn patch(body: serde_json::Value) -> LeadPatch {
    serde_json::from_value(body).expect("a patch body")
}

#[tokio::test]
async fn the_stage_operation_closes_with_a_reason_and_reopens() {
    let env = env().await;
    let acme = env.account(EDITOR).await;
    let id = env.create(&acme, json!({"phone": "0712345678"})).await.id;

    let lost = env.leads.set_stage(&acme, id, to("Lost", Some("no budget"))).await.expect("moved");
    assert_eq!((lost.stage, lost.closed, lost.lost_reason.as_deref()), (LeadStage::Lost, true, Some("no budget")));
    assert_eq!(lost.closed_at, Some(env.clock.now()));

    let reopened = env.leads.set_stage(&acme, id, to("contacted", None)).await.expect("reopened");
    assert_eq!((reopened.stage, reopened.closed, reopened.closed_at), (LeadStage::Contacted, false, None));
    assert_eq!(reopened.lost_reason, None);
}

#[tokio::test]
async fn a_move_the_rules_refuse_changes_nothing() {
    let env = env().await;
    let acme = env.account(EDITOR).await;
    let id = env.create(&acme, json!({"phone": "0712345678"})).await.id;
    assert_refused(env.leads.set_stage(&acme, id, to("lost", None)).await, ErrorKind::Validation, "reason_required");
    assert_refused(env.leads.set_stage(&acme, id, to("dreaming", None)).await, ErrorKind::Validation, "invalid");
    assert_refused(
        env.leads.update(&acme, id, patch(json!({"stage": "unqualified", "company": "Duka"}))).await,
        ErrorKind::Validation,
        "reason_required",
    );

    let won = env.create(&acme, json!({"phone": "0754321987", "stage": "won"})).await.id;
    assert_refused(
        env.leads.update(&acme, won, patch(json!({"stage": "new", "company": "Duka"}))).await,
        ErrorKind::Conflict,
        "won_locked",
    );
    assert_refused(
        env.upsert(&acme, json!({"phone": "0754321987", "stage": "new"})).await,
        ErrorKind::Conflict,
        "won_locked",
    );
    let lead = env.leads.get(&acme, won).await.expect("read");
    assert_eq!((lead.stage, lead.company), (LeadStage::Won, None), "nothing applied");
    let lead = env.leads.get(&acme, id).await.expect("read");
    assert_eq!((lead.stage, lead.company), (LeadStage::New, None), "nothing applied");
}

#[tokio::test]
async fn a_patch_sets_clears_and_refuses_members_the_record_lacks() {
    let env = env().await;
    let acme = env.account(EDITOR).await;
    let id = env.create(&acme, json!({"phone": "0712345678", "name": "Amina", "score": 40})).await.id;
    let lead = env
        .leads
        .update(&acme, id, patch(json!({"name": null, "company": " Duka ", "score": 75})))
        .await
        .expect("patched");
    assert_eq!((lead.name, lead.company.as_deref(), lead.score), (None, Some("Duka"), Some(75)));

    let error = assert_refused(
        env.leads.update(&acme, id, patch(json!({"assigned_to": 1, "archived": null, "score": 101}))).await,
        ErrorKind::Validation,
        "invalid",
    );
    assert_eq!(fields(&error), ["archived", "assigned_to", "score"]);
}
