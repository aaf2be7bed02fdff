//! Who may do what: permissions, the visibility of leads assigned to others, and tenant
//! isolation (another tenant's lead is not found, never forbidden).

use kernel::ErrorKind;
use leads::ops::Assignment;
use leads::stage::StageChange;
use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn each_operation_needs_its_permission() {
    let env = env().await;
    let acme = env.account(EDITOR).await;
    let viewer = env.colleague(acme.tenant_id, "leads.view").await;
    let id = env.create(&acme, json!({"phone": "0712345678"})).await.id;

    assert_eq!(env.leads.get(&viewer, id).await.expect("viewers read").id, id);
    let refused = env.upsert(&viewer, json!({"phone": "0712345678", "company": "Duka"})).await;
    assert_eq!(refused.expect_err("no leads.edit").kind, ErrorKind::Forbidden);
    let refused = env.leads.assign(&acme, id, Assignment { user_id: None }).await;
    assert_eq!(refused.expect_err("no leads.assign").kind, ErrorKind::Forbidden);
    assert_eq!(env.leads.delete(&acme, id).await.expect_err("no leads.delete").kind, ErrorKind::Forbidden);
}

#[tokio::test]
async fn a_lead_assigned_to_someone_else_is_out_of_sight() {
    let env = env().await;
    let boss = env.account(MANAGER).await;
    let editor = env.colleague(boss.tenant_id, EDITOR).await;
    let colleague = env.colleague(boss.tenant_id, EDITOR).await;
    let id = env.create(&boss, json!({"phone": "0712345678"})).await.id;
    assert_eq!(env.leads.get(&editor, id).await.expect("unassigned: seen").id, id);

    let kernel::Issuer::User { id: colleague_id, .. } = colleague.issuer else { panic!("a user's key") };
    let assigned = env.leads.assign(&boss, id, Assignment { user_id: Some(colleague_id.0) }).await.expect("assigned");
    assert_eq!(assigned.assigned_to.map(|a| a.id), Some(colleague_id.0));

    assert_eq!(env.leads.get(&editor, id).await.expect_err("hidden").kind, ErrorKind::NotFound);
    assert_eq!(env.leads.get(&colleague, id).await.expect("the assignee sees it").id, id);
    assert_eq!(env.leads.get(&boss, id).await.expect("leads.data.all sees it").id, id);
    let matched = env.upsert(&editor, json!({"phone": "0712345678"})).await;
    assert_eq!(matched.expect_err("an upsert matching it").kind, ErrorKind::Conflict);
}

#[tokio::test]
async fn another_tenant_s_lead_is_not_found() {
    let env = env().await;
    let acme = env.account(MANAGER).await;
    let other = env.account(MANAGER).await;
    let id = env.create(&acme, json!({"phone": "0712345678"})).await.id;

    assert_eq!(env.leads.get(&other, id).await.expect_err("read").kind, ErrorKind::NotFound);
    let stage = StageChange { stage: Some("won".into()), reason: None };
    assert_eq!(env.leads.set_stage(&other, id, stage).await.expect_err("stage").kind, ErrorKind::NotFound);
    let patch = serde_json::from_value(json!({"company": "Duka"})).expect("patch");
    assert_eq!(env.leads.update(&other, id, patch).await.expect_err("patch").kind, ErrorKind::NotFound);
    assert_eq!(env.leads.delete(&other, id).await.expect_err("delete").kind, ErrorKind::NotFound);
    // the same person in the other tenant is a lead of its own
    let theirs = env.create(&other, json!({"phone": "0712345678"})).await;
    assert_ne!(theirs.id, id);
    assert_eq!(env.leads.get(&acme, id).await.expect("ours is untouched").company, None);
}
