//! `statement_timeout`: a timer per statement that sets the statement's cancel flag
//! (`CancelFlag::time_out`) once the time has passed. The statement stops at its next look
//! at the flag — between the batches of a scan, while it waits for a transaction, in
//! `pg_sleep`, and before each batch of its result ([`stopping_when_canceled`]: a SELECT
//! runs as its rows are sent) — with 57014 "canceling statement due to statement
//! timeout". A timer is stopped when its statement ends: with the statement, or with its
//! result's rows (the stream owns the timer), or when the session's next statement
//! starts (COPY FROM STDIN's keeps going while the data arrives); at most one per
//! session is pending. [`telling_its_end`] marks the other end of such a statement:
//! when its rows have all been sent (its transaction's end, for `pg_stat_database`).

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::DataFusionError;
use datafusion::execution::{RecordBatchStream, SendableRecordBatchStream};
use futures::{Stream, StreamExt};
use iolab_engine::exec::cancel::CancelFlag;

/// A pending `statement_timeout`, stopped when dropped.
pub struct StatementTimer(tokio::task::AbortHandle);

impl StatementTimer {
    /// A timer that times `flag` out after `timeout_ms` (none for 0: no timeout, or
    /// outside a tokio runtime).
    pub fn start(timeout_ms: i32, flag: CancelFlag) -> Option<StatementTimer> {
        if timeout_ms <= 0 {
            return None;
        }
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        let task = runtime.spawn(async move {
            tokio::time::sleep(Duration::from_millis(timeout_ms as u64)).await;
            flag.time_out();
        });
        Some(StatementTimer(task.abort_handle()))
    }
}

impl Drop for StatementTimer {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// `stream` (a result's rows, sent after the statement returned them) stopping with the
/// statement's cancel error once `flag` is set, before it computes its next batch; the
/// statement's `timer` runs until the rows end.
pub fn stopping_when_canceled(
    stream: SendableRecordBatchStream,
    flag: CancelFlag,
    timer: Option<StatementTimer>,
) -> SendableRecordBatchStream {
    Box::pin(StopWhenCanceled {
        schema: stream.schema(),
        inner: stream,
        flag,
        timer,
        stopped: false,
    })
}

struct StopWhenCanceled {
    schema: SchemaRef,
    inner: SendableRecordBatchStream,
    flag: CancelFlag,
    timer: Option<StatementTimer>,
    stopped: bool,
}

impl Stream for StopWhenCanceled {
    type Item = datafusion::error::Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.stopped {
            return Poll::Ready(None);
        }
        if let Err(e) = self.flag.check() {
            self.stopped = true;
            self.timer = None;
            return Poll::Ready(Some(Err(DataFusionError::External(Box::new(e)))));
        }
        let next = self.inner.poll_next_unpin(cx);
        if matches!(next, Poll::Ready(None | Some(Err(_)))) {
            self.timer = None;
        }
        next
    }
}

impl RecordBatchStream for StopWhenCanceled {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// `stream`, telling `ended` once whether it gave all its rows (`true`) or failed or was
/// dropped before its end (`false`): a statement whose rows are computed as they are sent
/// ends only then (`pg_stat_database`'s transactions).
pub fn telling_its_end(
    stream: SendableRecordBatchStream,
    ended: impl FnOnce(bool) + Send + 'static,
) -> SendableRecordBatchStream {
    Box::pin(TellEnd {
        schema: stream.schema(),
        inner: stream,
        ended: Some(Box::new(ended)),
    })
}

struct TellEnd {
    schema: SchemaRef,
    inner: SendableRecordBatchStream,
    ended: Option<Box<dyn FnOnce(bool) + Send>>,
}

impl TellEnd {
    fn tell(&mut self, complete: bool) {
        if let Some(ended) = self.ended.take() {
            ended(complete);
        }
    }
}

impl Stream for TellEnd {
    type Item = datafusion::error::Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = self.inner.poll_next_unpin(cx);
        match &next {
            Poll::Ready(None) => self.tell(true),
            Poll::Ready(Some(Err(_))) => self.tell(false),
            _ => {}
        }
        next
    }
}

impl RecordBatchStream for TellEnd {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

impl Drop for TellEnd {
    fn drop(&mut self) {
        self.tell(false);
    }
}
