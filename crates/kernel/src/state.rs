//! State machines, one way: a status enum, the events that move it, and one table of
//! `(from, event, to)` rows that both the Rust code ([`Status::apply`]) and the SQL guards
//! ([`Event::sources`], for `status = ANY($n)`) read. A domain declares its enums and its
//! table and implements [`Status`] and [`Event`]; [`check`] proves the table's own rules in
//! its tests. No other code spells a status.

use std::fmt;

/// A status stored and sent as a wire value (`"queued"`).
pub trait Status: Copy + Eq + fmt::Debug + fmt::Display + 'static {
    type Event: Event<Status = Self>;
    /// Every status, in the contract's order.
    const ALL: &'static [Self];

    /// The contract's wire value, also the stored one.
    fn as_str(self) -> &'static str;

    fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|status| status.as_str() == s)
    }

    /// No event leaves it.
    fn is_final(self) -> bool {
        !Self::Event::TRANSITIONS.iter().any(|&(from, _, _)| from == self)
    }

    /// The status `event` moves this one to, when the table has that row.
    fn apply(self, event: Self::Event) -> Result<Self, IllegalTransition<Self, Self::Event>> {
        Self::Event::TRANSITIONS
            .iter()
            .find(|&&(from, on, _)| from == self && on == event)
            .map(|&(_, _, to)| to)
            .ok_or(IllegalTransition { from: self, event })
    }
}

/// What happens to a status; each event has exactly one target.
pub trait Event: Copy + Eq + fmt::Debug + 'static {
    type Status: Status<Event = Self>;
    /// Every event.
    const ALL: &'static [Self];
    /// Every allowed transition: (from, event, to).
    const TRANSITIONS: &'static [(Self::Status, Self, Self::Status)];

    /// The status this event leads to.
    fn target(self) -> Self::Status {
        Self::TRANSITIONS.iter().find(|&&(_, on, _)| on == self).map(|&(_, _, to)| to).unwrap_or_else(|| {
            unreachable!("{self:?} is in no row of its table (`kernel::state::check` proves every event is)")
        })
    }

    /// The statuses this event may leave, as stored values: for SQL `status = ANY($n)`, so
    /// that the database applies the same table under concurrency.
    fn sources(self) -> Vec<&'static str> {
        Self::TRANSITIONS.iter().filter(|&&(_, on, _)| on == self).map(|&(from, _, _)| from.as_str()).collect()
    }
}

/// An event the current status does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IllegalTransition<S, E> {
    pub from: S,
    pub event: E,
}

impl<S: fmt::Display, E: fmt::Debug> fmt::Display for IllegalTransition<S, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} cannot take the {:?} event", self.from, self.event)
    }
}

impl<S: fmt::Display + fmt::Debug, E: fmt::Debug> std::error::Error for IllegalTransition<S, E> {}

/// A move the table refuses is a bug of the caller, which checks the status first (in SQL, with
/// [`Event::sources`]): a 500.
impl<S: fmt::Display, E: fmt::Debug> From<IllegalTransition<S, E>> for crate::Error {
    fn from(error: IllegalTransition<S, E>) -> Self {
        crate::Error::internal(error)
    }
}

/// The rules every table keeps, for a machine's tests: no row twice, each event in a row and
/// with one target, wire values that read back, and `apply` refusing every pair outside it.
pub fn check<S: Status>() {
    let rows = S::Event::TRANSITIONS;
    for (i, &(from, event, to)) in rows.iter().enumerate() {
        assert!(!rows[i + 1..].iter().any(|&(f, e, _)| f == from && e == event), "{from:?} {event:?} twice");
        assert_eq!(to, event.target(), "{from:?} {event:?} has another target than the event's");
    }
    for &event in S::Event::ALL {
        assert!(rows.iter().any(|&(_, e, _)| e == event), "{event:?} is in no row");
    }
    for &from in S::ALL {
        assert_eq!(S::parse(from.as_str()), Some(from), "{from:?} reads back");
        for &event in S::Event::ALL {
            match rows.iter().find(|&&(f, e, _)| f == from && e == event) {
                Some(&(_, _, to)) => assert_eq!(from.apply(event), Ok(to)),
                None => assert_eq!(from.apply(event), Err(IllegalTransition { from, event })),
            }
        }
    }
}

/// `Display` as the wire value, and the diesel mapping to a `text` column, for a type with an
/// `as_str` and a `parse` (a [`Status`], or a status with no table, like an order's).
#[macro_export]
macro_rules! wire_text {
    ($kind:ty) => {
        impl ::std::fmt::Display for $kind {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                #[allow(unused_imports)]
                use $crate::state::Status as _;
                f.write_str(self.as_str())
            }
        }

        impl ::diesel::serialize::ToSql<::diesel::sql_types::Text, ::diesel::pg::Pg> for $kind {
            fn to_sql<'b>(
                &'b self,
                out: &mut ::diesel::serialize::Output<'b, '_, ::diesel::pg::Pg>,
            ) -> ::diesel::serialize::Result {
                #[allow(unused_imports)]
                use $crate::state::Status as _;
                <str as ::diesel::serialize::ToSql<::diesel::sql_types::Text, ::diesel::pg::Pg>>::to_sql(
                    self.as_str(),
                    out,
                )
            }
        }

        impl ::diesel::deserialize::FromSql<::diesel::sql_types::Text, ::diesel::pg::Pg> for $kind {
            fn from_sql(bytes: ::diesel::pg::PgValue<'_>) -> ::diesel::deserialize::Result<Self> {
                #[allow(unused_imports)]
                use $crate::state::Status as _;
                let raw =
                    <String as ::diesel::deserialize::FromSql<::diesel::sql_types::Text, ::diesel::pg::Pg>>::from_sql(
                        bytes,
                    )?;
                <$kind>::parse(&raw).ok_or_else(|| format!("unknown {} {raw:?}", stringify!($kind)).into())
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Door {
        Open,
        Shut,
    }

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Push {
        Close,
        Open,
    }

    impl Status for Door {
        type Event = Push;
        const ALL: &'static [Self] = &[Door::Open, Door::Shut];

        fn as_str(self) -> &'static str {
            match self {
                Door::Open => "open",
                Door::Shut => "shut",
            }
        }
    }

    crate::wire_text!(Door);
    crate::wire_text!(Stuck);

    impl Event for Push {
        type Status = Door;
        const ALL: &'static [Self] = &[Push::Close, Push::Open];
        const TRANSITIONS: &'static [(Door, Push, Door)] =
            &[(Door::Open, Push::Close, Door::Shut), (Door::Shut, Push::Open, Door::Open)];
    }

    #[test]
    fn the_table_decides_every_move() {
        check::<Door>();
        assert_eq!(Door::Open.apply(Push::Close), Ok(Door::Shut));
        assert_eq!(Door::Open.apply(Push::Open), Err(IllegalTransition { from: Door::Open, event: Push::Open }));
        assert_eq!(Push::Open.sources(), ["shut"]);
        assert!(!Door::Shut.is_final());
        assert_eq!(
            IllegalTransition { from: Door::Shut, event: Push::Open }.to_string(),
            "shut cannot take the Open event"
        );
    }

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct Stuck;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    struct Nudge;

    impl Status for Stuck {
        type Event = Nudge;
        const ALL: &'static [Self] = &[Stuck];

        fn as_str(self) -> &'static str {
            "stuck"
        }
    }

    impl Event for Nudge {
        type Status = Stuck;
        const ALL: &'static [Self] = &[Nudge];
        const TRANSITIONS: &'static [(Stuck, Nudge, Stuck)] = &[(Stuck, Nudge, Stuck), (Stuck, Nudge, Stuck)];
    }

    #[test]
    #[should_panic(expected = "Stuck Nudge twice")]
    fn a_row_twice_is_caught() {
        check::<Stuck>();
    }
}
