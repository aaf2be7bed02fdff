//! `POST /contact-groups/{group}/contacts/batch`: up to 500 contacts matched on their full
//! number. Planning happens in memory, so the writes are one multi-row insert plus the updates.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use kernel::Error;
use kernel::phone::ContactPhone;

use crate::body::{ContactBody, ContactInput, from_value};
use crate::contact::{ContactRow, new_uid, parse_phone};
use crate::ids::{ContactId, GroupId};
use crate::service::{merge_fields, row_state};

/// The contract's limit on one batch.
pub const MAX_BATCH_ROWS: usize = 500;

/// `POST /contact-groups/{group}/contacts/batch`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct NewContacts {
    /// 1 to 500 contacts, each like a single create. A row that breaks a rule (or is not a
    /// contact object) is rejected on its own while the others land.
    #[schema(schema_with = crate::body::batch_rows)]
    pub contacts: Vec<BatchRow>,
    /// `true` leaves contacts whose number is already in the group untouched; by default they
    /// are updated by merge.
    #[serde(default)]
    pub skip_existing: Option<bool>,
}

/// One row of a batch: the contact, or why it could not be read.
#[derive(Debug, Clone)]
pub struct BatchRow(pub Result<ContactInput, Error>);

impl<'de> Deserialize<'de> for BatchRow {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(|row| Self(from_value(row)))
    }
}

impl From<ContactInput> for BatchRow {
    fn from(input: ContactInput) -> Self {
        Self(Ok(input))
    }
}

impl NewContacts {
    /// A batch of these contacts, updating the numbers already in the group.
    pub fn new(contacts: impl IntoIterator<Item = ContactInput>) -> Self {
        Self { contacts: contacts.into_iter().map(BatchRow::from).collect(), skip_existing: None }
    }

    pub(crate) fn check(&self) -> Result<(), Error> {
        match self.contacts.len() {
            0 => Err(Error::field("contacts", "The contacts array needs at least one contact.")),
            n if n > MAX_BATCH_ROWS => Err(Error::field(
                "contacts",
                format!("A batch holds at most {MAX_BATCH_ROWS} contacts; {n} were sent."),
            )),
            _ => Ok(()),
        }
    }
}

/// What a contact holds besides its identity.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ContactState {
    pub name: String,
    pub country_code: String,
    pub phone_number: String,
    pub full_phone_number: String,
    pub is_subscribed: bool,
    pub custom_field_values: Map<String, Value>,
}

/// A merge-only change (contract: PATCH changes only the keys sent).
pub(crate) fn apply_patch(state: &ContactState, body: &ContactBody, default_cc: &str) -> Result<ContactState, Error> {
    let mut next = state.clone();
    if body.phone.is_some() || body.country_code.is_some() {
        let (number, field) = body.phone.clone().unwrap_or_else(|| (state.phone_number.clone(), "PHONE"));
        let cc = body.country_code.clone().unwrap_or_else(|| state.country_code.clone());
        let phone = parse_phone(&number, field, Some(&cc), default_cc)?;
        next.full_phone_number = phone.full();
        next.country_code = phone.country_code;
        next.phone_number = phone.national;
    }
    if let Some(name) = &body.name {
        next.name = name.clone();
    }
    if let Some(subscribed) = body.is_subscribed {
        next.is_subscribed = subscribed;
    }
    next.custom_field_values = merge_fields(next.custom_field_values, &body.custom_fields);
    Ok(next)
}

fn new_state(body: &ContactBody, phone: &ContactPhone) -> ContactState {
    ContactState {
        name: body.name.clone().unwrap_or_else(|| phone.full()),
        country_code: phone.country_code.clone(),
        phone_number: phone.national.clone(),
        full_phone_number: phone.full(),
        is_subscribed: body.is_subscribed.unwrap_or(true),
        custom_field_values: merge_fields(Map::new(), &body.custom_fields),
    }
}

/// Every row parsed and its number normalized, before looking at the database.
pub(crate) struct Plan {
    rows: Vec<Result<(ContactBody, ContactPhone), Error>>,
}

pub(crate) fn plan(rows: Vec<BatchRow>, default_cc: &str) -> Plan {
    let rows = rows
        .into_iter()
        .map(|row| {
            let body = row.0?.read()?;
            let (number, field) =
                body.phone.clone().ok_or_else(|| Error::field("PHONE", "The PHONE field is required."))?;
            let phone = parse_phone(&number, field, body.country_code.as_deref(), default_cc)?;
            Ok((body, phone))
        })
        .collect();
    Plan { rows }
}

pub(crate) struct NewContact {
    pub uid: String,
    pub state: ContactState,
}

#[derive(Default)]
pub(crate) struct Writes {
    pub creates: Vec<NewContact>,
    pub updates: Vec<(ContactId, ContactState)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Created,
    Updated,
    Skipped,
    Rejected,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RowResult {
    pub index: usize,
    /// The contact's uid; null for a rejected row.
    pub uid: Option<String>,
    pub outcome: Outcome,
}

/// Why a row was rejected: `errors` names the member (`PHONE`), or `contact` for the whole row.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = ContactRowProblem)]
pub struct Problem {
    pub index: usize,
    pub errors: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BatchReport {
    pub group_id: i64,
    pub received: usize,
    pub created: usize,
    pub updated: usize,
    pub skipped: usize,
    pub rejected: usize,
    /// One entry per row, in order.
    pub results: Vec<RowResult>,
    pub problems: Vec<Problem>,
}

/// A contact the batch may write: one already in the group (`id` set) or one an earlier row of
/// the batch creates.
struct Target {
    id: Option<ContactId>,
    uid: String,
    state: ContactState,
    touched: bool,
}

impl Plan {
    /// The distinct full numbers of the rows that parsed.
    pub(crate) fn numbers(&self) -> Vec<String> {
        let mut numbers: Vec<String> = self.rows.iter().flatten().map(|(_, phone)| phone.full()).collect();
        numbers.sort();
        numbers.dedup();
        numbers
    }

    /// Decides each row's fate against the contacts already in the group.
    pub(crate) fn resolve(
        self,
        group_id: GroupId,
        skip_existing: bool,
        existing: Vec<ContactRow>,
    ) -> (BatchReport, Writes) {
        let mut targets: Vec<Target> = existing
            .iter()
            .map(|row| Target { id: Some(row.id), uid: row.uid.clone(), state: row_state(row), touched: false })
            .collect();
        let mut by_number: HashMap<String, usize> =
            existing.iter().enumerate().map(|(i, row)| (row.full_phone_number.clone(), i)).collect();
        let mut report = BatchReport {
            group_id: group_id.0,
            received: self.rows.len(),
            created: 0,
            updated: 0,
            skipped: 0,
            rejected: 0,
            results: Vec::with_capacity(self.rows.len()),
            problems: Vec::new(),
        };
        for (index, row) in self.rows.into_iter().enumerate() {
            let outcome = row.and_then(|(body, phone)| match by_number.get(&phone.full()) {
                Some(&i) if skip_existing && targets[i].id.is_some() => Ok((targets[i].uid.clone(), Outcome::Skipped)),
                // An existing contact, or (a number repeated in the batch) the one an earlier
                // row created: either way the row updates it.
                Some(&i) => {
                    let target = &mut targets[i];
                    target.state = apply_patch(&target.state, &body, &phone.country_code)?;
                    target.touched = true;
                    Ok((target.uid.clone(), Outcome::Updated))
                }
                None => {
                    let uid = new_uid();
                    by_number.insert(phone.full(), targets.len());
                    let state = new_state(&body, &phone);
                    targets.push(Target { id: None, uid: uid.clone(), state, touched: true });
                    Ok((uid, Outcome::Created))
                }
            });
            match outcome {
                Ok((uid, outcome)) => {
                    match outcome {
                        Outcome::Created => report.created += 1,
                        Outcome::Updated => report.updated += 1,
                        Outcome::Skipped => report.skipped += 1,
                        Outcome::Rejected => report.rejected += 1,
                    }
                    report.results.push(RowResult { index, uid: Some(uid), outcome });
                }
                Err(error) => {
                    report.rejected += 1;
                    let error = error.into_details();
                    let errors = if error.errors.is_empty() {
                        BTreeMap::from([("contact".to_owned(), vec![error.message])])
                    } else {
                        error.errors
                    };
                    report.problems.push(Problem { index, errors });
                    report.results.push(RowResult { index, uid: None, outcome: Outcome::Rejected });
                }
            }
        }
        let mut writes = Writes::default();
        for target in targets.into_iter().filter(|t| t.touched) {
            match target.id {
                Some(id) => writes.updates.push((id, target.state)),
                None => writes.creates.push(NewContact { uid: target.uid, state: target.state }),
            }
        }
        (report, writes)
    }
}
