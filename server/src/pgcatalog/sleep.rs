//! `pg_sleep(seconds)`: the statement waits, as PostgreSQL's does. It sleeps in steps of
//! at most 10 ms and looks at the statement's cancel flag between them, so that a cancel
//! request (psql's Ctrl-C) or `statement_timeout` ends it with 57014 at once. The thread
//! sleeps as PostgreSQL's backend does; the runtime moves its other tasks (the timer
//! that sets the flag among them) to another worker meanwhile (`block_in_place`).

use std::time::{Duration, Instant};

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::error::{DataFusionError, Result};

use super::batch::V;
use super::functions::{def, per_row, Ctx, Def};

/// The longest step between two looks at the cancel flag.
const STEP: Duration = Duration::from_millis(10);

pub(super) fn functions() -> Vec<Def> {
    vec![def("pg_sleep", 1..=1, DataType::Utf8, |ctx, args, rows| {
        let seconds = cast(&args[0], &DataType::Float64)?;
        let seconds = seconds.as_primitive::<Float64Type>();
        per_row(rows, |i| {
            if seconds.is_valid(i) {
                sleep(ctx, seconds.value(i))?;
            }
            // `void`, shown as psql shows PostgreSQL's.
            Ok(V::text(""))
        })
    })
    .volatile()
    .each_row()]
}

/// Sleeps `seconds` (nothing when not positive), unless the statement is canceled.
fn sleep(ctx: &Ctx, seconds: f64) -> Result<()> {
    if !(seconds > 0.0) {
        return Ok(());
    }
    let until = Instant::now() + Duration::from_secs_f64(seconds.min(1e9));
    tokio::task::block_in_place(|| loop {
        if let Err(e) = ctx.check_cancel() {
            return Err(DataFusionError::External(Box::new(e)));
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        std::thread::sleep(left.min(STEP));
    })
}
