//! Status columns (contract: Data record status fields): a record starts in an initial state,
//! and a change is checked against the current state. Under `strict` only the declared moves
//! are legal; otherwise any move between declared states is, and declared moves keep their
//! permissions.

use kernel::{Caller, Error, Result};
use serde::Serialize;

use crate::DataService;
use crate::definition::{Column, ColumnType, State};
use crate::service::View;

/// Checks a status column going from `from` to `to` (`None` is empty) for `view`'s caller.
pub fn check(column: &Column, view: &View, from: Option<&str>, to: Option<&str>) -> Result<()> {
    let key = &column.key;
    match (from, to) {
        (from, to) if from == to => Ok(()),
        (_, None) => Ok(()), // clearing; `required` is checked with the other columns
        (None, Some(to)) => {
            if column.config.initial.iter().any(|s| s == to) {
                Ok(())
            } else {
                let message = format!("{key} must start in one of: {}.", column.config.initial.join(", "));
                Err(Error::field(key.clone(), message))
            }
        }
        (Some(from), Some(to)) => {
            let declared = column.config.moves.iter().find(|m| m.from == from && m.to == to);
            match declared {
                Some(step) => match &step.permission {
                    Some(p) if !view.holds(p) => {
                        Err(Error::forbidden(format!("Moving {key} from {from} to {to} needs the permission {p}.")))
                    }
                    _ => Ok(()),
                },
                None if column.strict() => {
                    let allowed: Vec<&str> =
                        column.config.moves.iter().filter(|m| m.from == from).map(|m| m.to.as_str()).collect();
                    let allowed = if allowed.is_empty() { "none".to_owned() } else { allowed.join(", ") };
                    Err(Error::conflict(format!("{key} cannot move from {from} to {to} (from {from}: {allowed})."))
                        .with_detail("field", key.clone()))
                }
                None => Ok(()),
            }
        }
    }
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Move {
    pub from: String,
    pub to: String,
    pub permission: Option<String>,
    /// Whether this caller may make the move now.
    pub allowed: bool,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct StatusField {
    pub key: String,
    pub label: String,
    pub required: bool,
    pub strict: bool,
    pub states: Vec<State>,
    pub initial: Vec<String>,
    pub moves: Vec<Move>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct States {
    pub fields: Vec<StatusField>,
}

impl DataService {
    /// `GET /data/tables/{table}/states`.
    pub async fn states(&self, caller: &Caller, table: crate::TableId) -> Result<States> {
        let mut conn = self.conn(caller.tenant_id).await?;
        let view = self.view(&mut conn, caller, table).await?;
        let fields = view
            .definition()
            .columns
            .iter()
            .filter(|c| c.kind == ColumnType::Status)
            .map(|column| StatusField {
                key: column.key.clone(),
                label: column.label.clone(),
                required: column.required,
                strict: column.strict(),
                states: column.config.states.clone(),
                initial: column.config.initial.clone(),
                moves: column
                    .config
                    .moves
                    .iter()
                    .map(|m| Move {
                        from: m.from.clone(),
                        to: m.to.clone(),
                        permission: m.permission.clone(),
                        allowed: view.can_write_column(column) && m.permission.as_ref().is_none_or(|p| view.holds(p)),
                    })
                    .collect(),
            })
            .collect();
        Ok(States { fields })
    }
}
