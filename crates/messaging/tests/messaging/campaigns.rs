//! Campaign states: dispatch runs a draft to completion, a cancel is allowed before, a resume
//! of a campaign that is not paused is refused.

use kernel::ErrorKind;
use messaging::campaigns::{CampaignRef, CampaignRequest, CampaignStatus};

use crate::common::{drain, env, group, tenant};

fn campaign_for(group: i64) -> CampaignRequest {
    CampaignRequest {
        contact_list_id: Some(group.to_string()),
        message: Some("Hi {{name}}".into()),
        ..Default::default()
    }
}

#[tokio::test]
async fn a_draft_campaign_runs_to_completed_and_then_cannot_be_resumed() {
    let env = env().await;
    let caller = tenant(&env, "255", 100_000).await;
    let group = group(&env, caller.tenant_id, &["255712340100", "255712340101", "255712340102"]).await;
    let created = env.service.create_campaigns(&caller, campaign_for(group)).await.expect("campaign");
    let campaign = &created.campaigns[0];
    assert_eq!(campaign.status, CampaignStatus::Draft);
    assert_eq!(campaign.total_recipients, 3);

    drain(&env).await;
    let id = CampaignRef::Id(messaging::ids::CampaignId(campaign.id));
    let done = env.service.campaign(&caller, &id).await.expect("campaign");
    assert_eq!(done.status, CampaignStatus::Completed, "{done:?}");
    assert_eq!(done.sent_count + done.failed_count, 3);

    // completed -> running is no transition
    let refused = env.service.resume_campaign(&caller, &id).await.expect_err("not paused");
    assert_eq!(refused.kind, ErrorKind::Conflict);
    assert_eq!(refused.message, "Only a paused campaign can be resumed; this one is completed.");
    let refused = env.service.cancel_campaign(&caller, &id).await.expect_err("finished");
    assert_eq!(refused.message, "The campaign is already completed.");
}

#[tokio::test]
async fn a_draft_campaign_can_be_cancelled_and_then_sends_nothing() {
    let env = env().await;
    let caller = tenant(&env, "255", 100_000).await;
    let group = group(&env, caller.tenant_id, &["255712340200"]).await;
    let created = env.service.create_campaigns(&caller, campaign_for(group)).await.expect("campaign");
    let uid = created.campaigns[0].uid.clone();
    let by_uid = kernel::parse_id::<CampaignRef>(&uid, "Campaign").expect("a cmp_ uid");

    let cancelled = env.service.cancel_campaign(&caller, &by_uid).await.expect("draft -> cancelled");
    assert_eq!(cancelled.status, CampaignStatus::Cancelled);
    drain(&env).await;
    let after = env.service.campaign(&caller, &by_uid).await.expect("campaign");
    assert_eq!(after.status, CampaignStatus::Cancelled);
    assert_eq!(after.sent_count, 0);
}

#[tokio::test]
async fn a_campaign_the_balance_cannot_pay_pauses() {
    let env = env().await;
    let caller = tenant(&env, "255", 0).await;
    let group = group(&env, caller.tenant_id, &["255712340300", "255712340301"]).await;
    let created = env.service.create_campaigns(&caller, campaign_for(group)).await.expect("campaign");
    drain(&env).await;
    let id = CampaignRef::Id(messaging::ids::CampaignId(created.campaigns[0].id));
    let paused = env.service.campaign(&caller, &id).await.expect("campaign");
    assert_eq!(paused.status, CampaignStatus::Paused);
    assert_eq!(paused.status_reason.as_deref(), Some("The prepaid balance cannot pay for the next batch."));
    // paused -> running is allowed (its next batch pauses it again while the wallet is empty)
    let resumed = env.service.resume_campaign(&caller, &id).await.expect("resume");
    assert_eq!(resumed.status, CampaignStatus::Running);
}

#[tokio::test]
async fn opted_out_contacts_are_not_counted_nor_messaged() {
    let env = env().await;
    let caller = tenant(&env, "255", 100_000).await;
    let group = group(&env, caller.tenant_id, &["255712340400", "255712340401"]).await;
    let add = messaging::blacklist::BlacklistAdd { numbers: vec!["+255712340401".into()], reason: None };
    env.service.blacklist_add(&caller, add).await.expect("blacklist");
    let created = env.service.create_campaigns(&caller, campaign_for(group)).await.expect("campaign");
    assert_eq!(created.campaigns[0].total_recipients, 1);
    drain(&env).await;
    let id = CampaignRef::Id(messaging::ids::CampaignId(created.campaigns[0].id));
    let done = env.service.campaign(&caller, &id).await.expect("campaign");
    assert_eq!(done.status, CampaignStatus::Completed);
    assert_eq!(done.sent_count + done.failed_count, 1);
}

/// A dispatch step reads its campaign without a lock; a cancel that commits while the step
/// writes its batch wins, and nothing the step wrote stays (no message, no charge).
#[tokio::test]
async fn a_cancel_that_commits_during_a_dispatch_step_undoes_the_step() {
    use diesel::sql_types::{BigInt, Uuid as SqlUuid};
    use diesel_async::{RunQueryDsl, SimpleAsyncConnection};

    #[derive(diesel::QueryableByName)]
    struct Token {
        #[diesel(sql_type = SqlUuid)]
        dispatch_token: uuid::Uuid,
    }
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let env = env().await;
    let caller = tenant(&env, "255", 100_000).await;
    let group = group(&env, caller.tenant_id, &["255712340500", "255712340501"]).await;
    let created = env.service.create_campaigns(&caller, campaign_for(group)).await.expect("campaign");
    let id = created.campaigns[0].id;
    async fn token(conn: &mut store::PooledConn, id: i64) -> uuid::Uuid {
        diesel::sql_query("SELECT dispatch_token FROM campaigns WHERE id = $1")
            .bind::<BigInt, _>(id)
            .get_result::<Token>(conn)
            .await
            .expect("campaign")
            .dispatch_token
    }
    let mut other = crate::common::conn(&env.pool).await;
    let old = token(&mut other, id).await;
    // already running, so the step goes straight to its batch
    diesel::sql_query(
        "UPDATE campaigns SET status = 'running',
                last_contact_id = (SELECT max(id) FROM contacts WHERE group_id = $2) WHERE id = $1",
    )
    .bind::<BigInt, _>(id)
    .bind::<BigInt, _>(group)
    .execute(&mut other)
    .await
    .expect("running");

    // the cancel holds the row, uncommitted, while the step runs
    other.batch_execute("BEGIN").await.expect("begin");
    diesel::sql_query("UPDATE campaigns SET status = 'cancelled', dispatch_token = gen_random_uuid() WHERE id = $1")
        .bind::<BigInt, _>(id)
        .execute(&mut other)
        .await
        .expect("cancel");
    let service = env.service.clone();
    let step =
        tokio::spawn(
            async move { service.dispatch_campaign(caller.tenant_id, messaging::ids::CampaignId(id), old).await },
        );
    let mut watcher = crate::common::conn(&env.pool).await;
    let mut waiting = 0;
    for _ in 0..200 {
        waiting = diesel::sql_query("SELECT count(*) AS n FROM pg_locks WHERE NOT granted")
            .get_result::<Count>(&mut watcher)
            .await
            .expect("locks")
            .n;
        if waiting > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert!(waiting > 0, "the step never reached the campaign row");
    other.batch_execute("COMMIT").await.expect("commit");
    step.await.expect("joined").expect("a superseded step is no failure");

    let written = diesel::sql_query("SELECT count(*) AS n FROM messages WHERE campaign_id = $1")
        .bind::<BigInt, _>(id)
        .get_result::<Count>(&mut watcher)
        .await
        .expect("messages")
        .n;
    assert_eq!(written, 0, "the step's messages were rolled back");
    let by_id = CampaignRef::Id(messaging::ids::CampaignId(id));
    let after = env.service.campaign(&caller, &by_id).await.expect("campaign");
    assert_eq!(after.status, CampaignStatus::Cancelled);
    assert_ne!(token(&mut watcher, id).await, old);
    let wallet = accounts::wallet::get(&mut watcher, caller.tenant_id).await.expect("wallet");
    assert_eq!(wallet.balance_minor, 100_000, "nothing was charged");
}
