//! The timeline: each state a payment took, oldest first.

use diesel_async::RunQueryDsl;
use kernel::Error;
use kernel::state::Status;
use time::OffsetDateTime;

use crate::payment::Row;
use crate::schema::payment_timeline;
use crate::service::Source;
use crate::state::PaymentState;

pub(crate) async fn record(
    conn: &mut store::Conn,
    row: &Row,
    old: Option<PaymentState>,
    new: PaymentState,
    source: Source,
    message: Option<&str>,
    at: OffsetDateTime,
) -> Result<(), Error> {
    use diesel::ExpressionMethods;
    diesel::insert_into(payment_timeline::table)
        .values((
            payment_timeline::tenant_id.eq(row.tenant_id),
            payment_timeline::payment_id.eq(row.id),
            payment_timeline::old_state.eq(old.map(|s| s.as_str())),
            payment_timeline::new_state.eq(new.as_str()),
            payment_timeline::source.eq(source.as_str()),
            payment_timeline::message.eq(message),
            payment_timeline::at.eq(at),
        ))
        .execute(conn)
        .await?;
    Ok(())
}
