//! `LISTEN` on a channel, kept open: one connection of its own (outside the pool), reopened
//! when lost. What listens learns when it may trust what it heard ([`Heard::Listening`]), each
//! message, and when messages may have been missed ([`Heard::Lost`]).

use std::time::Duration;

use futures_util::StreamExt;
use tokio_postgres::AsyncMessage;

/// What the listener tells its handler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// `LISTEN` holds from now on: every message sent after this one arrives.
    Listening,
    /// One message's payload.
    Message(String),
    /// The connection is gone: messages may be missed until the next `Listening`.
    Lost,
}

/// Listens on `channel` until the task is aborted, calling `on` with what it hears. A lost
/// connection is reopened after a pause (250 ms, doubling up to 5 s).
pub fn listen(
    database_url: String,
    channel: &'static str,
    on: impl Fn(Heard) + Send + Sync + 'static,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut pause = Duration::from_millis(250);
        loop {
            match session(&database_url, channel, &on).await {
                Ok(()) => pause = Duration::from_millis(250),
                Err(error) => tracing::warn!(%error, channel, "listening failed; trying again"),
            }
            on(Heard::Lost);
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(5));
        }
    })
}

/// One connection's life: `LISTEN`, then every message until the connection ends.
async fn session(
    database_url: &str,
    channel: &str,
    on: &(impl Fn(Heard) + Send + Sync),
) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = tokio_postgres::connect(database_url, tokio_postgres::NoTls).await?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    // the connection is driven here; its messages go to this session through `tx`
    let driver = tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(message) = messages.next().await {
            match message {
                Ok(AsyncMessage::Notification(n)) => {
                    if tx.send(Ok(n.payload().to_owned())).is_err() {
                        return;
                    }
                }
                Ok(_) => {}
                Err(error) => {
                    let _ = tx.send(Err(error));
                    return;
                }
            }
        }
    });
    client.batch_execute(&format!("LISTEN {channel}")).await?;
    on(Heard::Listening);
    // a connection that died without closing (a network gone quiet) is found by a probe
    let mut probe = tokio::time::interval(PROBE_EVERY);
    let ended = loop {
        tokio::select! {
            message = rx.recv() => match message {
                Some(Ok(payload)) => on(Heard::Message(payload)),
                Some(Err(error)) => break Err(error),
                None => break Ok(()),
            },
            _ = probe.tick() => match tokio::time::timeout(PROBE_EVERY, client.batch_execute("")).await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => break Err(error),
                Err(_) => {
                    tracing::warn!(channel, "the listening connection stopped answering");
                    break Ok(());
                }
            },
        }
    };
    driver.abort();
    ended
}

/// How often the listening connection is checked, and how long it may take to answer.
const PROBE_EVERY: Duration = Duration::from_secs(10);
