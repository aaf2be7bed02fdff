//! The rules of receivers and deliveries, as the service and the delivery loop apply them.

use kernel::{Caller, ErrorKind, PageRequest};
use serde_json::json;
use webhooks::log::{DeliveryFilter, Recover};
use webhooks::{Deliverer, WebhookId, WebhookPatch, WebhookStatus};

use super::support::{Receiver, emit, lead, new_webhook, setup, tenant};

#[tokio::test]
async fn a_private_address_is_refused_at_registration_and_on_update() {
    let s = setup(50).await;
    for url in ["https://10.0.0.7/hooks", "https://192.168.1.20/hooks", "https://169.254.169.254/latest"] {
        let error = s.service.create(&s.caller, new_webhook(url, &["lead.created"], None)).await.expect_err(url);
        assert_eq!(error.kind, ErrorKind::Validation, "{url}");
        let message = &error.errors["url"];
        assert!(format!("{message:?}").contains("The url is refused"), "{url}: {message:?}");
    }
    let receiver = Receiver::answering(200).await;
    let made = s.service.create(&s.caller, new_webhook(&receiver.url, &["lead.created"], None)).await.expect("made");
    let patch = WebhookPatch { url: Some("https://10.0.0.7/hooks".into()), ..WebhookPatch::default() };
    let error = s.service.update(&s.caller, WebhookId(made.webhook.id), patch).await.expect_err("private");
    assert!(error.errors.contains_key("url"), "{:?}", error.errors);
}

#[tokio::test]
async fn a_lead_event_goes_only_to_receivers_whose_filters_it_passes() {
    let s = setup(50).await;
    let (won, any) = (Receiver::answering(200).await, Receiver::answering(200).await);
    let filters = Some(json!({"stages": ["won"]}));
    let only_won = s.service.create(&s.caller, new_webhook(&won.url, &["lead.created"], filters)).await.expect("won");
    let every = s.service.create(&s.caller, new_webhook(&any.url, &["lead.created"], None)).await.expect("any");
    let (only_won, every) = (WebhookId(only_won.webhook.id), WebhookId(every.webhook.id));

    emit(&s, s.tenant, "lead.created", lead("new")).await;
    emit(&s, s.tenant, "lead.created", lead("won")).await;
    // a receiver without filters has its deliveries at once; the filtered one's are screened first
    assert_eq!(s.log(every).await.len(), 2);
    assert_eq!(s.log(only_won).await.len(), 0, "not shown before its filter passed it");

    Deliverer::new(s.service.clone()).deliver_due().await.expect("deliveries");
    assert_eq!((won.hits(), any.hits()), (1, 2));
    let log = s.log(only_won).await;
    assert_eq!(log.len(), 1, "the event its filter refused was never its delivery");
    assert_eq!(log[0].state, "delivered");
    assert!(s.log(every).await.iter().all(|d| d.state == "delivered"));
}

#[tokio::test]
async fn failures_pause_a_receiver_and_recovery_resumes_it() {
    let s = setup(2).await;
    let failing = Receiver::answering(503).await;
    let made = s.service.create(&s.caller, new_webhook(&failing.url, &["lead.created"], None)).await.expect("made");
    let id = WebhookId(made.webhook.id);
    assert_eq!(made.webhook.status, WebhookStatus::Active);

    emit(&s, s.tenant, "lead.created", lead("new")).await;
    emit(&s, s.tenant, "lead.created", lead("won")).await;
    Deliverer::new(s.service.clone()).deliver_due().await.expect("deliveries");
    let paused = s.service.get(&s.caller, id).await.expect("receiver");
    assert_eq!(paused.status, WebhookStatus::Paused);
    assert_eq!(paused.consecutive_failures, 2);
    assert!(s.log(id).await.iter().all(|d| d.state == "held"), "its retries wait for it");

    let since = "2000-01-01T00:00:00Z".to_owned();
    let recovered = s.service.recover(&s.caller, id, Recover { since: Some(since) }).await.expect("recovered");
    assert_eq!(recovered.released, 2);
    let resumed = s.service.get(&s.caller, id).await.expect("receiver");
    assert_eq!((resumed.status, resumed.consecutive_failures), (WebhookStatus::Active, 0));
    assert!(s.log(id).await.iter().all(|d| d.state == "pending"));
}

#[tokio::test]
async fn another_tenant_finds_no_receiver_and_gets_none_of_its_events() {
    let s = setup(50).await;
    let receiver = Receiver::answering(200).await;
    let made = s.service.create(&s.caller, new_webhook(&receiver.url, &["lead.created"], None)).await.expect("made");
    let id = WebhookId(made.webhook.id);

    let other = tenant(&s.pool, "Other").await;
    let stranger = Caller::operator(other, "255");
    assert_eq!(s.service.get(&stranger, id).await.expect_err("theirs").kind, ErrorKind::NotFound);
    let patch = WebhookPatch { events: Some(vec!["lead.updated".into()]), ..WebhookPatch::default() };
    assert_eq!(s.service.update(&stranger, id, patch).await.expect_err("theirs").kind, ErrorKind::NotFound);
    assert_eq!(s.service.delete(&stranger, id).await.expect_err("theirs").kind, ErrorKind::NotFound);
    let page = PageRequest { page: 1, per_page: 20 };
    let log = s.service.deliveries(&stranger, id, &DeliveryFilter::default(), page).await;
    assert_eq!(log.expect_err("theirs").kind, ErrorKind::NotFound);
    assert!(s.service.list(&stranger, page).await.expect("list").items.is_empty());

    // the other tenant's event reaches no receiver of this one
    emit(&s, other, "lead.created", lead("new")).await;
    Deliverer::new(s.service.clone()).deliver_due().await.expect("deliveries");
    assert_eq!(receiver.hits(), 0);
    assert!(s.log(id).await.is_empty());
}
