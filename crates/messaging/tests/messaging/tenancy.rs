//! Another tenant's message or campaign is not found, whatever names it.

use kernel::ErrorKind;
use messaging::campaigns::{CampaignRef, CampaignRequest};
use messaging::{MessageRef, SendRequest};

use crate::common::{env, group, tenant};

#[tokio::test]
async fn another_tenants_message_is_not_found() {
    let env = env().await;
    let acme = tenant(&env, "255", 100_000).await;
    let globex = tenant(&env, "255", 100_000).await;
    let req = SendRequest { recipient: Some("0712345678".into()), message: Some("Hi".into()), ..Default::default() };
    let sent = env.service.send(&acme, req).await.expect("send");
    let message = &sent.messages[0];
    for raw in [message.uid.clone(), message.id.to_string()] {
        let reference = kernel::parse_id::<MessageRef>(&raw, "Message").expect("well-formed");
        assert!(env.service.message(&acme, &reference).await.is_ok(), "{raw}");
        let error = env.service.message(&globex, &reference).await.expect_err("foreign");
        assert_eq!(error.kind, ErrorKind::NotFound, "{raw}");
        assert_eq!(error.message, "Message not found.");
    }
}

#[tokio::test]
async fn another_tenants_campaign_is_not_found_nor_changed() {
    let env = env().await;
    let acme = tenant(&env, "255", 100_000).await;
    let globex = tenant(&env, "255", 100_000).await;
    let group = group(&env, acme.tenant_id, &["255712340500"]).await;
    let req =
        CampaignRequest { contact_list_id: Some(group.to_string()), message: Some("Hi".into()), ..Default::default() };
    // another tenant's group is no group of the caller
    let error = env.service.create_campaigns(&globex, req.clone()).await.expect_err("foreign group");
    assert_eq!(error.kind, ErrorKind::NotFound);

    let created = env.service.create_campaigns(&acme, req).await.expect("campaign");
    let campaign = &created.campaigns[0];
    for raw in [campaign.uid.clone(), campaign.id.to_string()] {
        let reference = kernel::parse_id::<CampaignRef>(&raw, "Campaign").expect("well-formed");
        for error in [
            env.service.campaign(&globex, &reference).await.expect_err("view"),
            env.service.cancel_campaign(&globex, &reference).await.expect_err("cancel"),
            env.service.resume_campaign(&globex, &reference).await.expect_err("resume"),
        ] {
            assert_eq!(error.kind, ErrorKind::NotFound, "{raw}");
            assert_eq!(error.message, "Campaign not found.");
        }
    }
    let still = env.service.campaign(&acme, &CampaignRef::Id(messaging::ids::CampaignId(campaign.id))).await;
    assert_eq!(still.expect("own").status, messaging::campaigns::CampaignStatus::Draft);
}
