//! In-chat forms (contract: Forms, Form version state, `form.submitted`): the pure rules,
//! with no database and no provider calls.
//!
//! - [`question_types`]: the thirteen question types, their provider components, the
//!   data-table column each answer fits, and their limits (`GET /chat/forms/question-types`).
//! - [`definition`]: the definition shape and [`check`], which lists every [`Issue`] (the
//!   `issues[]` of the create, patch and publish answers), including a published key's type.
//! - [`answers`]: [`read_answers`] turns a provider's flow reply into the contract's answer
//!   shapes; [`sensitive`] and [`redact`] keep phone, email and uploads behind
//!   `forms.answers.export`.
//! - [`menu`]: the fixed three-screen menu form and reading its answer back into an order.
//! - [`flow_json`](mod@flow_json): a checked definition as the provider's Flow JSON, one screen a page.

pub mod answers;
pub mod definition;
pub mod flow_json;
pub mod menu;
pub mod question_types;

pub use answers::{read_answers, redact, sensitive};
pub use definition::{Choice, Definition, Issue, Page, Question, check};
pub use flow_json::{flow_json, screen_id};
pub use menu::{MenuOrder, MenuProduct, menu_definition, menu_order};
pub use question_types::{Limits, QUESTION_TYPES, QuestionType, question_type};
