//! The tools a run may call: the workspace's MCP tools, reached in process. The gateway hands
//! the service its [`Toolbox`] (the MCP catalogue), so this crate needs no MCP code and the
//! tools run exactly as an MCP client's would: the same permission checks, validation and
//! tenant scoping.

use kernel::{Caller, Error};
use providers::ToolSpec;
use serde_json::Value;

/// Who a run's tool calls act as: the credential that submitted it, as it is now (its issuer's
/// current permissions), and the scopes an MCP client was granted (none for a REST key, whose
/// issuer's permissions are the only bound).
#[derive(Debug, Clone)]
pub struct Runner {
    pub caller: Caller,
    pub scopes: Option<Vec<String>>,
}

#[async_trait::async_trait]
pub trait Toolbox: Send + Sync {
    /// The tools `names` select: a server's name selects each of its tools, a tool's name
    /// itself. `Err` carries the index of the first name that is neither.
    fn select(&self, names: &[String]) -> Result<Vec<ToolSpec>, usize>;

    /// Calls `tool` with `arguments` as `runner`: its answer, or the refusal the model sees.
    async fn call(&self, runner: &Runner, tool: &str, arguments: Value) -> Result<Value, Error>;
}
