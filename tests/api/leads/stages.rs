//! Lead stages (contract: Lead stage): `won`, `lost` and `unqualified` close a lead at the
//! clock's time, the reason kept; reopening through the stage operation; a closed lead matched
//! by an upsert keeps its stage and reports `was_closed`.

use api_tests::{json, spawn};
use serde_json::Value;
use time::Duration;

use super::support::*;

#[actix_web::test]
async fn won_lost_and_unqualified_close_a_lead_at_the_clock_s_time() {
    // Proves closing through the stage operation: `closed`, `closed_at` = now, `stage_label`,
    // and `lost_reason` kept for lost and unqualified only; open stages do not close.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    for (n, (stage, label, reason)) in [
        ("won", "Won", None),
        ("lost", "Lost", Some("went with a competitor")),
        ("unqualified", "Unqualified", Some("no budget")),
    ]
    .into_iter()
    .enumerate()
    {
        let id = id_of(&create(&app, &acme.key, json!({"phone": format!("07123456{n}0")})).await);
        app.clock.advance(Duration::minutes(3));
        let res = set_stage(&app, &acme.key, &id, json!({"stage": stage, "reason": reason})).await;
        assert_status(&res, 200);
        let lead = res.data();
        assert_eq!(
            (&lead["stage"], &lead["stage_label"], &lead["closed"]),
            (&json!(stage), &json!(label), &json!(true))
        );
        assert_eq!(time_of(lead, "closed_at"), app.clock.now(), "{stage}");
        assert_eq!(time_of(lead, "updated_at"), app.clock.now(), "{stage}");
        assert_eq!(lead["lost_reason"], json!(reason), "{stage}");
        assert_eq!(read(&app, &acme.key, &id).await["closed"], true, "{stage}");
    }
    for (n, stage) in ["contacted", "qualified", "opportunity"].into_iter().enumerate() {
        let id = id_of(&create(&app, &acme.key, json!({"phone": format!("07543219{n}7")})).await);
        let res = set_stage(&app, &acme.key, &id, json!({"stage": stage})).await;
        assert_status(&res, 200);
        assert_eq!((&res.data()["stage"], &res.data()["closed"]), (&json!(stage), &json!(false)));
        assert_eq!(res.data()["closed_at"], Value::Null);
    }
}

#[actix_web::test]
async fn the_stage_operation_reopens_a_closed_lead() {
    // Proves reopening: `closed` false, `closed_at` and `lost_reason` null.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678"})).await);
    let res = set_stage(&app, &acme.key, &id, json!({"stage": "lost", "reason": "too expensive"})).await;
    assert_status(&res, 200);
    app.clock.advance(Duration::hours(1));

    let res = set_stage(&app, &acme.key, &id, json!({"stage": "contacted"})).await;
    assert_status(&res, 200);
    let lead = res.data();
    assert_eq!((&lead["stage"], &lead["closed"]), (&json!("contacted"), &json!(false)));
    assert_eq!((&lead["closed_at"], &lead["lost_reason"]), (&Value::Null, &Value::Null));
    let lead = read(&app, &acme.key, &id).await;
    assert_eq!((&lead["closed"], &lead["closed_at"]), (&json!(false), &Value::Null));
}

#[actix_web::test]
async fn an_upsert_sets_a_stage_with_its_reason() {
    // Proves the upsert's `stage` and `reason`: a created lead may start closed, and a matched
    // one moves, keeping the reason as `lost_reason`.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let lead = create(&app, &acme.key, json!({"phone": "0712345678", "stage": "won"})).await;
    assert_eq!((&lead["stage"], &lead["closed"]), (&json!("won"), &json!(true)));
    assert_eq!(time_of(&lead, "closed_at"), app.clock.now());

    create(&app, &acme.key, json!({"phone": "0754321987", "stage": "qualified"})).await;
    app.clock.advance(Duration::minutes(1));
    let data =
        upsert(&app, &acme.key, json!({"phone": "0754321987", "stage": "Lost", "reason": "no stock"}), 200).await;
    let lead = &data["lead"];
    assert_eq!(
        (&lead["stage"], &lead["closed"], &lead["lost_reason"]),
        (&json!("lost"), &json!(true), &json!("no stock"))
    );
    assert_eq!(time_of(lead, "closed_at"), app.clock.now());
    assert_eq!(data["was_closed"], false);
}

#[actix_web::test]
async fn a_closed_lead_matched_by_an_upsert_keeps_its_stage_and_reports_it() {
    // Proves `was_closed` and that an upsert without a stage leaves a closed lead closed (its
    // reason and closing time too), while it still fills fields.
    let app = spawn().await;
    let acme = app.account(EDITOR).await;
    let id = id_of(&create(&app, &acme.key, json!({"phone": "0712345678"})).await);
    let closed = set_stage(&app, &acme.key, &id, json!({"stage": "lost", "reason": "no budget"})).await;
    assert_status(&closed, 200);
    let closed_at = time_of(closed.data(), "closed_at");
    app.clock.advance(Duration::days(1));

    let data = upsert(&app, &acme.key, json!({"phone": "0712345678", "company": "Duka"}), 200).await;
    assert_eq!(data["was_closed"], true);
    let lead = &data["lead"];
    assert_eq!(
        (&lead["stage"], &lead["closed"], &lead["lost_reason"]),
        (&json!("lost"), &json!(true), &json!("no budget"))
    );
    assert_eq!(time_of(lead, "closed_at"), closed_at);
    assert_eq!(lead["company"], "Duka");

    // reopened by a stage sent with the upsert
    let data = upsert(&app, &acme.key, json!({"phone": "0712345678", "stage": "contacted"}), 200).await;
    assert_eq!(data["was_closed"], true);
    assert_eq!((&data["lead"]["stage"], &data["lead"]["closed"]), (&json!("contacted"), &json!(false)));
    let data = upsert(&app, &acme.key, json!({"phone": "0712345678"}), 200).await;
    assert_eq!(data["was_closed"], false, "an open lead");
}
