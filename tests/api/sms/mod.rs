//! SMS messaging and campaigns (issue 3): sending, routing, billing, receipts, inbound,
//! opt-out and campaigns, through HTTP against PostgreSQL with the sandbox provider.

mod admin;
mod billing;
mod campaigns;
pub(crate) mod crash;
mod hooks;
mod lifecycle;
mod reading;
mod send;
mod send_rules;
pub(crate) mod support;

use api_tests::{Account, TestApp};
use kernel::TenantId;
use messaging::channels::{Channel, NewChannel, NewSender};

pub const SEND: &str = "/api/v3/sms/send";

/// An account ready to send: a sandbox SMS channel with an approved sender id `ACME`, one
/// shilling per segment, and 1,000.00 TZS in the wallet.
pub struct SmsAccount {
    pub account: Account,
    pub channel: Channel,
}

impl SmsAccount {
    pub fn key(&self) -> &str {
        &self.account.key
    }

    pub fn tenant(&self) -> TenantId {
        self.account.tenant
    }
}

pub async fn sms_account<S, B>(app: &TestApp<S>, permissions: &str) -> SmsAccount
where
    S: actix_web::dev::Service<
            actix_http::Request,
            Response = actix_web::dev::ServiceResponse<B>,
            Error = actix_web::Error,
        >,
    B: actix_web::body::MessageBody,
{
    let account = app.account(permissions).await;
    let mut conn = app.conn().await;
    let new =
        NewChannel { kind: "sms".into(), provider: "sandbox".into(), code: Some("main".into()), ..Default::default() };
    let channel = messaging::channels::add(&mut conn, &app.keyring, account.tenant, new).await.expect("channel");
    let sender = NewSender {
        channel: "main".into(),
        kind: "sender_id".into(),
        value: "ACME".into(),
        label: Some("Acme".into()),
        status: None,
    };
    messaging::channels::add_sender(&mut conn, account.tenant, sender).await.expect("sender");
    messaging::channels::set_rate(&mut conn, account.tenant, None, 100).await.expect("rate");
    accounts::wallet::credit(&mut conn, account.tenant, 100_000, None).await.expect("credit");
    SmsAccount { account, channel }
}
