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
