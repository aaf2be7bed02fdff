//! Agent tasks (contract: "Automations, agent tasks, operations and other route groups", the
//! `/api/engine` route group): a task given to a language model with the workspace's own tools.
//! Submitting one makes a run ([`run::Run`]); a job advances it a step at a time ([`advance`]):
//! a model turn through a [`providers::ModelGateway`], then each tool call it asks for through
//! the [`Toolbox`] (the workspace's MCP tools, in process), each recorded as it starts and as it
//! ends. So a run survives a restart and resumes at its last finished step, and a step whose
//! process died is marked `interrupted`, never executed twice.
//!
//! Each step is priced from the [`RateCard`] into the tenant's wallet as it ends; a run stops
//! at its limits (steps, wall time, spend) and ends `failed` with the reason. Runs that end emit
//! `run.completed` or `run.failed` as business events (not webhooks).
//!
//! Everything goes through [`AgentService`].

pub mod advance;
pub mod run;
mod service;
pub mod task;
pub mod toolbox;

pub use run::{Run, RunList, RunQuery, Step, Usage};
pub use service::{AgentService, AgentsConfig, RateCard};
pub use task::{Approval, Limits, TaskBody};
pub use toolbox::{Runner, Toolbox};

kernel::id!(
    /// An agent run (`run_uuid`).
    RunId: Uuid
);

/// The business events runs emit, for automations (the contract's webhook catalogue has none).
pub const EVENTS: [&str; 2] = ["run.completed", "run.failed"];
