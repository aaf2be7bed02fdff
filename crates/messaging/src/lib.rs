//! SMS messaging and campaigns (contract: Message, Campaign, Message status, Campaign status,
//! SMS): recipients and segments, routing through the account's channels, billing from the
//! wallet, dispatch as jobs, receipts, inbound messages and opt-out.
//!
//! [`MessagingService`] carries every rule; give it a pool, a clock, the provider clients and
//! the tunables, and call it with a [`kernel::Caller`]. Sending one SMS through the sandbox
//! provider, against a throwaway database (`DATABASE_URL` names the cluster):
//!
//! ```
//! use std::{sync::Arc, time::Duration};
//!
//! use messaging::channels::{NewChannel, NewSender};
//! use messaging::{MessagingConfig, MessagingService, SendRequest};
//!
//! tokio::runtime::Runtime::new().unwrap().block_on(async {
//!     let db = store::testing::TestDb::new().await;
//!     let mut conn = store::connect_system(&db.pool()).await.unwrap();
//!     // An account with a sandbox channel, an approved sender id, a price and some credit.
//!     let tenant = kernel::TenantId(accounts::tenants::create(&mut conn, "Acme", "TZS").await.unwrap().id);
//!     let channel = NewChannel { kind: "sms".into(), provider: "sandbox".into(), code: Some("main".into()), ..Default::default() };
//!     // with nothing configured, a key this database keeps seals provider credentials
//!     let keyring = store::secrets::Keyring::load(&mut conn, &Default::default()).await.unwrap();
//!     messaging::channels::add(&mut conn, &keyring, tenant, channel).await.unwrap();
//!     let sender = NewSender { channel: "main".into(), kind: "sender_id".into(), value: "ACME".into(), label: None, status: None };
//!     messaging::channels::add_sender(&mut conn, tenant, sender).await.unwrap();
//!     messaging::channels::set_rate(&mut conn, tenant, None, 100).await.unwrap();
//!     accounts::wallet::credit(&mut conn, tenant, 10_000, None).await.unwrap();
//!
//!     let sandbox = Arc::new(providers::Sandbox::new(Default::default()));
//!     let gateways = messaging::gateways::Gateways::new(providers::http_client().unwrap(), sandbox, Duration::from_secs(5), keyring);
//!     let service = MessagingService::new(db.pool(), kernel::Clock::system(), gateways, MessagingConfig::default());
//!
//!     // A national number is read under the account's calling code.
//!     let caller = kernel::Caller::operator(tenant, "255");
//!     let request = SendRequest { recipient: Some("0712345678".into()), message: Some("Karibu!".into()), ..Default::default() };
//!     let sent = service.send(&caller, request).await.unwrap();
//!     assert_eq!(sent.messages[0].recipient, "+255712345678");
//!     assert_eq!(accounts::wallet::get(&mut conn, tenant).await.unwrap().balance_minor, 9_900);
//! });
//! ```
//!
//! Its own rules are tested against a database in `tests/messaging.rs`.

pub mod blacklist;
pub mod campaigns;
pub mod channels;
pub mod chat;
pub mod credentials;
pub mod dispatch;
pub mod events;
pub mod forms;
pub mod gateways;
pub mod ids;
pub mod messages;
pub mod personalize;
pub mod receipts;
pub mod recipients;
mod schema;
pub mod segments;
pub mod send;
mod service;
pub mod status;
pub mod voice;

pub use messages::{Message, MessageFilter, MessageRef};
pub use send::{SendBody, SendRequest, SendResult};
pub use service::{MessagingConfig, MessagingService};
