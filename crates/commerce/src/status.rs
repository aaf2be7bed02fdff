//! Commerce's states, each with its rules in one table (as messaging's message status): an
//! order's status (contract: Order status), what its stock hold does between them, and a sync
//! run's status (contract: Sync report). Stored as their wire values in `text` columns.

use diesel::deserialize::FromSqlRow;
use diesel::expression::AsExpression;
use diesel::sql_types::Text;
use kernel::state::{Event, Status};

// ---------------------------------------------------------------------------------------------
// Order status

/// An order's status. The contract allows any status from any status; what a status does to
/// stock is its [`Hold`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, AsExpression, FromSqlRow)]
#[diesel(sql_type = Text)]
pub enum OrderStatus {
    Pending,
    Confirmed,
    Processing,
    Shipped,
    Delivered,
    Cancelled,
    Refunded,
}

/// What happens to an order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderEvent {
    /// `PUT /catalogues/orders/{order}/status`: any status from any status.
    Set(OrderStatus),
    /// `reservation_ttl_hours` passed: only a pending order's hold lapses (its status stays).
    HoldExpired,
}

impl OrderStatus {
    pub const ALL: [Self; 7] = [
        Self::Pending,
        Self::Confirmed,
        Self::Processing,
        Self::Shipped,
        Self::Delivered,
        Self::Cancelled,
        Self::Refunded,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Confirmed => "confirmed",
            Self::Processing => "processing",
            Self::Shipped => "shipped",
            Self::Delivered => "delivered",
            Self::Cancelled => "cancelled",
            Self::Refunded => "refunded",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.as_str() == s)
    }

    /// The wire values, for messages.
    pub fn names() -> Vec<&'static str> {
        Self::ALL.into_iter().map(Self::as_str).collect()
    }

    /// What the order does to stock in this status: pending holds, the next four commit, the
    /// last two release.
    pub fn hold(self) -> Hold {
        match self {
            Self::Pending => Hold::Held,
            Self::Cancelled | Self::Refunded => Hold::Released,
            Self::Confirmed | Self::Processing | Self::Shipped | Self::Delivered => Hold::Committed,
        }
    }

    /// The status after `event` (contract: Order status). A hold that expires in any status but
    /// `pending` is refused: the order keeps its stock.
    pub fn apply(self, event: OrderEvent) -> Result<OrderStatus, IllegalTransition<Self, OrderEvent>> {
        match event {
            OrderEvent::Set(to) => Ok(to),
            OrderEvent::HoldExpired if self == Self::Pending => Ok(self),
            OrderEvent::HoldExpired => Err(IllegalTransition { from: self, event }),
        }
    }
}

kernel::wire_text!(OrderStatus);

/// Where an order's units stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, AsExpression, FromSqlRow)]
#[diesel(sql_type = Text)]
pub enum Hold {
    /// Reserved for the order, still on hand.
    Held,
    /// Sold: the reservation ended, and under `svc` the units left the count on hand.
    Committed,
    /// Given back.
    Released,
}

/// One stock step of a hold move, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StockStep {
    /// Held units become sold.
    Commit,
    /// Held units are given back.
    Release,
    /// Sold units are put back on hand (under `svc`).
    Restock,
    /// The lines are held again, as far as stock allows.
    Hold,
}

use StockStep as Step;

/// Every hold move: (from, to, the stock steps, in order). Staying put moves nothing.
pub const HOLD_MOVES: &[(Hold, Hold, &[StockStep])] = &[
    (Hold::Held, Hold::Committed, &[Step::Commit]),
    (Hold::Held, Hold::Released, &[Step::Release]),
    (Hold::Committed, Hold::Released, &[Step::Restock]),
    (Hold::Committed, Hold::Held, &[Step::Restock, Step::Hold]),
    (Hold::Released, Hold::Held, &[Step::Hold]),
    (Hold::Released, Hold::Committed, &[Step::Hold, Step::Commit]),
];

impl Hold {
    pub const ALL: [Self; 3] = [Self::Held, Self::Committed, Self::Released];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Held => "held",
            Self::Committed => "committed",
            Self::Released => "released",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|hold| hold.as_str() == s)
    }

    /// The stock steps from this hold to `to`.
    pub fn steps_to(self, to: Hold) -> &'static [StockStep] {
        HOLD_MOVES.iter().find(|(from, target, _)| *from == self && *target == to).map_or(&[], |(_, _, steps)| steps)
    }
}

kernel::wire_text!(Hold);

// ---------------------------------------------------------------------------------------------
// Sync run status

/// A sync run's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, AsExpression, FromSqlRow)]
#[diesel(sql_type = Text)]
pub enum SyncStatus {
    Queued,
    Running,
    Completed,
    Failed,
}

/// What happens to a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SyncEvent {
    Start,
    /// Its rows were worked (a queued run is worked in one transaction, so it may skip `running`).
    Complete,
    /// Its last attempt failed.
    Fail,
}

/// Every allowed transition: (from, event, to).
pub const SYNC_TRANSITIONS: &[(SyncStatus, SyncEvent, SyncStatus)] = &[
    (SyncStatus::Queued, SyncEvent::Start, SyncStatus::Running),
    (SyncStatus::Queued, SyncEvent::Complete, SyncStatus::Completed),
    (SyncStatus::Running, SyncEvent::Complete, SyncStatus::Completed),
    (SyncStatus::Queued, SyncEvent::Fail, SyncStatus::Failed),
    (SyncStatus::Running, SyncEvent::Fail, SyncStatus::Failed),
];

impl Status for SyncStatus {
    type Event = SyncEvent;
    const ALL: &'static [Self] = &[Self::Queued, Self::Running, Self::Completed, Self::Failed];

    fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Failed => "failed",
        }
    }
}

impl Event for SyncEvent {
    type Status = SyncStatus;
    const ALL: &'static [Self] = &[Self::Start, Self::Complete, Self::Fail];
    const TRANSITIONS: &'static [(SyncStatus, SyncEvent, SyncStatus)] = SYNC_TRANSITIONS;
}

kernel::wire_text!(SyncStatus);

pub use kernel::state::IllegalTransition;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_order_moves_from_any_status_to_any_status() {
        for from in OrderStatus::ALL {
            for to in OrderStatus::ALL {
                assert_eq!(from.apply(OrderEvent::Set(to)), Ok(to));
            }
        }
    }

    #[test]
    fn only_a_pending_orders_hold_expires() {
        assert_eq!(OrderStatus::Pending.apply(OrderEvent::HoldExpired), Ok(OrderStatus::Pending));
        for from in OrderStatus::ALL.into_iter().filter(|s| *s != OrderStatus::Pending) {
            assert!(from.apply(OrderEvent::HoldExpired).is_err(), "{from}");
        }
    }

    #[test]
    fn pending_holds_cancelled_and_refunded_release_the_rest_commit() {
        let holds: Vec<&str> = OrderStatus::ALL.into_iter().map(|s| s.hold().as_str()).collect();
        assert_eq!(holds, ["held", "committed", "committed", "committed", "committed", "released", "released"]);
    }

    #[test]
    fn every_hold_move_has_its_stock_steps_and_staying_put_moves_nothing() {
        assert_eq!(Hold::Held.steps_to(Hold::Committed), [Step::Commit]);
        assert_eq!(Hold::Held.steps_to(Hold::Released), [Step::Release]);
        assert_eq!(Hold::Committed.steps_to(Hold::Released), [Step::Restock]);
        assert_eq!(Hold::Committed.steps_to(Hold::Held), [Step::Restock, Step::Hold]);
        assert_eq!(Hold::Released.steps_to(Hold::Held), [Step::Hold]);
        assert_eq!(Hold::Released.steps_to(Hold::Committed), [Step::Hold, Step::Commit]);
        for hold in Hold::ALL {
            assert!(hold.steps_to(hold).is_empty());
        }
    }

    #[test]
    fn a_sync_run_completes_or_fails_once() {
        assert_eq!(SyncStatus::Queued.apply(SyncEvent::Complete), Ok(SyncStatus::Completed));
        assert_eq!(SyncStatus::Running.apply(SyncEvent::Fail), Ok(SyncStatus::Failed));
        assert_eq!(SyncStatus::Queued.apply(SyncEvent::Start), Ok(SyncStatus::Running));
        for done in [SyncStatus::Completed, SyncStatus::Failed] {
            assert!(done.is_final());
            for event in [SyncEvent::Start, SyncEvent::Complete, SyncEvent::Fail] {
                assert!(done.apply(event).is_err());
            }
        }
        assert_eq!(SyncEvent::Fail.sources(), ["queued", "running"]);
        kernel::state::check::<SyncStatus>();
    }

    #[test]
    fn wire_values_read_back() {
        for s in OrderStatus::ALL {
            assert_eq!(OrderStatus::parse(s.as_str()), Some(s));
        }
        for h in Hold::ALL {
            assert_eq!(Hold::parse(h.as_str()), Some(h));
        }
    }
}
