//! What feeds `pg_stat_statements` (`iolab_stats::statements`): each successful statement
//! is recorded under its text with its constants replaced by `$n` ([`normalize`]), with
//! its execution time — from its start until its result is done: at once for a command,
//! after its last row was sent for a query (the rows' stream is wrapped, [`recorded`]) —,
//! the rows it returned or changed, and the buffer usage its scans and writes added to
//! its `StatementContext` (the same numbers EXPLAIN's BUFFERS shows). A statement that
//! fails is not recorded, as in PostgreSQL; nor is COPY FROM STDIN (its rows arrive after
//! the statement returns), nor planning (`plans` stays 0, as under PostgreSQL's default
//! `pg_stat_statements.track_planning = off`).

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::execution::{RecordBatchStream, SendableRecordBatchStream};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
use futures::{Stream, StreamExt};
use iolab_engine::exec::StatementContext;
use iolab_stats::statements::StatementRun;
use iolab_stats::IoStatsHub;

use crate::sql::Outcome;

/// `text` with every constant (number, string) replaced by `$n`, numbered after the
/// highest `$n` it already has, as PostgreSQL's query jumbling shows a statement.
pub fn normalize(text: &str) -> String {
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, text.trim()).tokenize() else {
        return text.trim().to_string();
    };
    let mut next = tokens
        .iter()
        .filter_map(|t| match t {
            Token::Placeholder(p) => p.strip_prefix('$')?.parse::<u32>().ok(),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let mut out = String::with_capacity(text.len());
    for t in &tokens {
        match t {
            Token::Number(..)
            | Token::SingleQuotedString(_)
            | Token::EscapedStringLiteral(_)
            | Token::NationalStringLiteral(_)
            | Token::HexStringLiteral(_) => {
                next += 1;
                out.push_str(&format!("${next}"));
            }
            Token::SemiColon => {}
            other => out.push_str(&other.to_string()),
        }
    }
    out.trim_end().to_string()
}

/// At most this many texts are remembered per session by [`NormalizedTexts`].
const NORMALIZED_TEXTS: usize = 256;

/// A session's recently normalized texts: a statement run again (a prepared statement,
/// a script's loop) is not tokenized again. Bounded by [`NORMALIZED_TEXTS`]; emptied when
/// full.
#[derive(Default)]
pub struct NormalizedTexts(HashMap<String, Arc<str>>);

impl NormalizedTexts {
    pub fn get(&mut self, text: &str) -> Arc<str> {
        if let Some(normalized) = self.0.get(text) {
            return normalized.clone();
        }
        if self.0.len() >= NORMALIZED_TEXTS {
            self.0.clear();
        }
        let normalized: Arc<str> = normalize(text).into();
        self.0.insert(text.to_string(), normalized.clone());
        normalized
    }
}

/// What is known of a statement when it returns: where to record it and what.
pub struct Tracked {
    pub hub: Arc<IoStatsHub>,
    pub userid: u32,
    pub query: Arc<str>,
    pub started: Instant,
    /// The statement's context (its buffer usage); none for statements that made none.
    pub ctx: Option<Arc<StatementContext>>,
}

impl Tracked {
    fn record(&self, rows: u64) {
        let usage = self
            .ctx
            .as_ref()
            .map(|c| *c.usage.lock())
            .unwrap_or_default();
        self.hub.statements.record(&StatementRun {
            userid: self.userid,
            query: &self.query,
            exec_ms: self.started.elapsed().as_secs_f64() * 1000.0,
            rows,
            usage: &usage,
        });
    }
}

/// Records the statement whose `outcome` this is: now for a command, when its result's
/// stream is done for rows.
pub fn recorded(tracked: Tracked, outcome: Outcome) -> Outcome {
    if outcome.has_rows() {
        return outcome.map_rows(|stream| recording(stream, tracked));
    }
    if let Outcome::Done(tag) | Outcome::TxnStart(tag) | Outcome::TxnEnd(tag) = &outcome {
        tracked.record(rows_of_tag(tag));
    }
    outcome
}

/// The rows a command tag reports (`INSERT 0 5`, `UPDATE 3`, `MOVE 2`); 0 for others.
fn rows_of_tag(tag: &str) -> u64 {
    let mut words = tag.split_whitespace();
    let counts = matches!(
        words.next(),
        Some("INSERT" | "UPDATE" | "DELETE" | "MERGE" | "COPY" | "FETCH" | "MOVE" | "SELECT")
    );
    match (counts, words.last()) {
        (true, Some(n)) => n.parse().unwrap_or(0),
        _ => 0,
    }
}

/// `stream`, counting its rows; the statement is recorded when the stream is dropped
/// (after the plan under it, so every scan has added its usage) unless it failed.
fn recording(stream: SendableRecordBatchStream, tracked: Tracked) -> SendableRecordBatchStream {
    Box::pin(Recording {
        schema: stream.schema(),
        inner: Some(stream),
        rows: AtomicU64::new(0),
        failed: false,
        tracked: Some(tracked),
    })
}

struct Recording {
    schema: SchemaRef,
    inner: Option<SendableRecordBatchStream>,
    rows: AtomicU64,
    failed: bool,
    tracked: Option<Tracked>,
}

impl Stream for Recording {
    type Item = datafusion::error::Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let next = inner.poll_next_unpin(cx);
        match &next {
            Poll::Ready(Some(Ok(batch))) => {
                self.rows
                    .fetch_add(batch.num_rows() as u64, Ordering::Relaxed);
            }
            Poll::Ready(Some(Err(_))) => self.failed = true,
            _ => {}
        }
        next
    }
}

impl RecordBatchStream for Recording {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        drop(self.inner.take());
        if let Some(tracked) = self.tracked.take().filter(|_| !self.failed) {
            tracked.record(*self.rows.get_mut());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_become_parameters_numbered_after_the_given_ones() {
        let cases = [
            (
                "SELECT * FROM t WHERE a = 5 AND b = 'x';",
                "SELECT * FROM t WHERE a = $1 AND b = $2",
            ),
            (
                "select abalance from pgbench_accounts where aid = $1",
                "select abalance from pgbench_accounts where aid = $1",
            ),
            (
                "UPDATE t SET v = v + 1.5 WHERE id = $2 AND s = E'a\\n'",
                "UPDATE t SET v = v + $3 WHERE id = $2 AND s = $4",
            ),
            (
                "SELECT '2024-01-01'::date  LIMIT 10",
                "SELECT $1::date  LIMIT $2",
            ),
            ("BEGIN", "BEGIN"),
        ];
        for (text, want) in cases {
            assert_eq!(normalize(text), want, "{text}");
        }
    }

    #[test]
    fn tags_tell_rows() {
        for (tag, rows) in [
            ("INSERT 0 5", 5),
            ("UPDATE 3", 3),
            ("MOVE 2", 2),
            ("CREATE TABLE", 0),
            ("COMMIT", 0),
        ] {
            assert_eq!(rows_of_tag(tag), rows, "{tag}");
        }
    }
}
