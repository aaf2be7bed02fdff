//! Label limits: names of 1 to 60 characters, `#RRGGBB` colours, at most 100 names a request,
//! and new names only with `leads.settings`.

use kernel::ErrorKind;
use leads::labels::{LabelNames, LabelPatch, NewLabel};
use serde_json::json;

use crate::common::*;

fn names(count: usize) -> LabelNames {
    LabelNames { labels: Some((0..count).map(|i| format!("label {i}")).collect()) }
}

#[tokio::test]
async fn a_label_keeps_to_its_limits() {
    let env = env().await;
    let acme = env.account(MANAGER).await;
    let new = |name: &str, color: Option<&str>| NewLabel {
        name: Some(name.to_owned()),
        color: color.map(str::to_owned),
        ..NewLabel::default()
    };
    let vip = env.leads.create_label(&acme, new("VIP", None)).await.expect("label");
    assert_eq!(vip.color, "#6B7280");
    let error = assert_refused(
        env.leads.create_label(&acme, new(&"x".repeat(61), Some("blue"))).await,
        ErrorKind::Validation,
        "invalid",
    );
    assert_eq!(fields(&error), ["color", "name"]);
    // a taken name (any case, spaces around) is a unique-value conflict
    let taken = env.leads.create_label(&acme, new(" vip ", None)).await.expect_err("taken");
    assert_eq!((taken.kind, fields(&taken)), (ErrorKind::Conflict, vec!["name"]), "{taken:?}");

    let described: LabelPatch = serde_json::from_value(json!({"description": "Big buyers"})).expect("patch");
    assert_eq!(
        env.leads.update_label(&acme, vip.id, described).await.expect("patched").description.as_deref(),
        Some("Big buyers")
    );
    let cleared: LabelPatch = serde_json::from_value(json!({"description": null})).expect("patch");
    let label = env.leads.update_label(&acme, vip.id, cleared).await.expect("patched");
    assert_eq!((label.name.as_str(), label.description), ("VIP", None), "null clears, the rest stays");
}

#[tokio::test]
async fn labels_go_on_a_lead_a_hundred_at_most_and_new_names_need_settings() {
    let env = env().await;
    let boss = env.account(MANAGER).await;
    let editor = env.colleague(boss.tenant_id, EDITOR).await;
    let id = env.create(&boss, json!({"phone": "0712345678"})).await.id;

    assert_refused(env.leads.add_lead_labels(&boss, id, names(101)).await, ErrorKind::Validation, "invalid");
    assert_refused(env.leads.add_lead_labels(&boss, id, names(0)).await, ErrorKind::Validation, "invalid");
    let added = env.leads.add_lead_labels(&editor, id, names(2)).await.expect("added");
    assert_eq!((added.added.len(), added.refused.len()), (0, 2), "no leads.settings: refused");
    let added = env.leads.add_lead_labels(&boss, id, names(100)).await.expect("added");
    assert_eq!((added.added.len(), added.lead.labels.len()), (100, 100));
    let again = env.leads.add_lead_labels(&editor, id, names(2)).await.expect("added");
    assert!(again.added.is_empty() && again.refused.is_empty(), "existing labels, already on the lead");
}
