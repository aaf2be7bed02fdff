//! The sandbox's calls, played out: the sandbox announces how a call goes (answered or not,
//! keys pressed, seconds on the line) and this job tells it turn by turn through the same
//! [`MessagingService::heard`] the provider's callbacks use.

use std::sync::Arc;

use kernel::{Error, TenantId};
use providers::{CallEnd, CallScript, ScriptedAnswer, VoiceAction, VoiceCallback};
use serde::{Deserialize, Serialize};
use store::jobs::{Job, JobContext, JobError};

use crate::MessagingService;
use crate::service::{job_tenant, no_tenant};

/// Turns a call may take before the player stops asking (menus loop at most this long).
const MAX_TURNS: usize = 16;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlayCall {
    #[serde(default = "no_tenant")]
    pub tenant_id: TenantId,
    pub call_id: i64,
    pub provider_call_id: String,
    pub script: CallScript,
}

impl Job for PlayCall {
    const NAME: &'static str = "voice.play_sandbox_call";
    type State = MessagingService;

    async fn run(self, service: Arc<MessagingService>, ctx: JobContext) -> Result<(), JobError> {
        let tenant = job_tenant(self.tenant_id, &ctx)?;
        service.play(tenant, self).await.map_err(JobError::from)
    }
}

impl MessagingService {
    async fn play(&self, tenant: TenantId, job: PlayCall) -> Result<(), Error> {
        let channel = {
            let mut conn = self.conn(tenant).await?;
            super::get(&mut conn, tenant, &super::CallRef::Id(super::CallId(job.call_id))).await?.channel_id
        };
        let id = job.provider_call_id;
        let active = |digits: Option<String>, recording_url: Option<String>| VoiceCallback::Active {
            provider_call_id: id.clone(),
            reference: None,
            digits,
            recording_url,
        };
        let ended = |end: CallEnd, duration_seconds: u32, recording_url: Option<String>| VoiceCallback::Ended {
            provider_call_id: id.clone(),
            reference: None,
            end,
            duration_seconds,
            cost: None,
            recording_url,
        };
        let (seconds, digits, early) = match job.script.answer {
            ScriptedAnswer::NotAnswered(end) => {
                self.heard(tenant, channel, ended(end, 0, None)).await?;
                return Ok(());
            }
            ScriptedAnswer::Answered { seconds, digits, hangs_up_early } => (seconds, digits, hangs_up_early),
        };
        let mut actions = self.heard(tenant, channel, active(None, None)).await?;
        let mut recorded = false;
        for turn in 0..MAX_TURNS {
            if early {
                break;
            }
            recorded |= actions.iter().any(|a| matches!(a, VoiceAction::Dial { record: true, .. }));
            let next = match actions.last() {
                Some(VoiceAction::GetDigits { .. }) => active(digits.clone(), None),
                Some(VoiceAction::Record { .. }) => active(None, Some(recording(&id, turn))),
                _ => break,
            };
            actions = self.heard(tenant, channel, next).await?;
        }
        let conversation = recorded.then(|| recording(&id, MAX_TURNS));
        self.heard(tenant, channel, ended(CallEnd::Completed, seconds, conversation)).await?;
        Ok(())
    }
}

/// Where the sandbox says a recording is: an address that never resolves.
fn recording(provider_call_id: &str, turn: usize) -> String {
    format!("https://recordings.sandbox.invalid/{provider_call_id}/{turn}.mp3")
}
