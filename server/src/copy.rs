//! COPY: `FROM STDIN` / `FROM 'file'` in text and CSV formats, and `TO STDOUT`.
//!
//! COPY FROM runs as one statement spread over many messages: the COPY statement opens
//! it (a transaction id, an inserter, a row parser), each CopyData chunk is parsed into
//! rows and the rows into typed column builders, and every [`COPY_BATCH_ROWS`] rows are
//! appended to the heap; CopyDone commits (or, in a transaction block, leaves the rows to
//! the block's COMMIT). The first bad row stops the load: later data is read and ignored
//! until CopyDone, which then reports the error with PostgreSQL's `CONTEXT: COPY t, line
//! N` — and the transaction is aborted, so no row of the COPY is visible.

use bytes::Bytes;
use datafusion::arrow::array::ArrayRef;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::sql::sqlparser::ast::{
    self, CopyLegacyCsvOption, CopyLegacyOption, CopyOption, CopySource, CopyTarget,
};
use futures::StreamExt;
use iolab_catalog::{sqlstate, PgError, PgResult, TableDef};
use iolab_engine::exec::context::ProgressReport;
use iolab_engine::exec::StatementContext;
use iolab_engine::heap::heapam::HeapInserter;
use iolab_engine::values::{
    ColumnParser, CopyEncoder, CopyFormat, CopyOptions, CopyParser, TextFormat,
};
use iolab_stats::progress::{copy as copy_progress, ProgressCommand};

use crate::session::Session;
use crate::sql::ddl::{ident_name, split_name};
use crate::sql::insert::{complete_rows, PROGRESS_EVERY_ROWS};
use crate::sql::{Outcome, StatementGuard, StatementRun};

/// Rows parsed before they are appended to the heap.
pub const COPY_BATCH_ROWS: usize = 8192;
/// Bytes read from a server-side file at a time.
const FILE_CHUNK_BYTES: usize = 1 << 20;

/// A COPY FROM in progress.
pub struct CopyIn {
    run: StatementRun,
    guard: Option<StatementGuard>,
    table: TableDef,
    targets: Vec<usize>,
    parser: CopyParser,
    columns: Vec<ColumnParser>,
    inserter: HeapInserter,
    /// The defaults of the columns the COPY leaves out.
    defaults: crate::sql::defaults::Defaults,
    /// The first error; data after it is ignored.
    error: Option<PgError>,
    /// `pg_stat_progress_copy`'s row, ended with the COPY.
    progress: ProgressReport,
    bytes: u64,
}

/// Is `parsed` a COPY FROM STDIN (one that waits for the client's data)?
pub fn reads_stdin(parsed: &crate::sql::Parsed) -> bool {
    matches!(parsed, crate::sql::Parsed::Sql(stmt) if matches!(
        **stmt,
        ast::Statement::Copy { to: false, target: CopyTarget::Stdin, .. }
    ))
}

/// Starts a COPY statement.
pub async fn start(
    session: &mut Session,
    run: StatementRun,
    guard: StatementGuard,
    stmt: &ast::Statement,
) -> PgResult<Outcome> {
    let ast::Statement::Copy {
        source,
        to,
        target,
        options,
        legacy_options,
        ..
    } = stmt
    else {
        return Err(PgError::internal("not a COPY statement"));
    };
    let pairs = option_pairs(options, legacy_options)?;
    if *to {
        let result = copy_to(&run, source, target, &pairs).await;
        guard.finish(result.is_ok())?;
        return result;
    }
    let CopySource::Table {
        table_name,
        columns,
    } = source
    else {
        return Err(PgError::syntax("COPY FROM needs a table, not a query"));
    };
    let opts = CopyOptions::from_pairs(&pairs)?;
    if opts.format == CopyFormat::Binary {
        return Err(PgError::unsupported(
            "COPY FROM in binary format is not supported yet",
        ));
    }
    let (schema, name) = split_name(table_name)?;
    if crate::sql::view::is_view(&run.db, schema.as_deref(), &name) {
        return Err(
            crate::sql::view::wrong_kind(format!("cannot copy to view \"{name}\""))
                .with_hint("To enable copying to a view, provide an INSTEAD OF INSERT trigger."),
        );
    }
    let table = run.resolve_table(schema.as_deref(), &name)?;
    let names: Vec<ast::ObjectName> = columns
        .iter()
        .map(|c| ast::ObjectName::from(vec![c.clone()]))
        .collect();
    let targets = crate::sql::insert::target_columns(&table, &names)?;
    let parser = CopyParser::new(
        &opts,
        targets
            .iter()
            .map(|&i| table.columns[i].name.clone())
            .collect(),
    );
    let parsers = targets
        .iter()
        .map(|&i| ColumnParser::with_capacity(table.columns[i].ty, COPY_BATCH_ROWS))
        .collect();
    let inserter = crate::sql::insert::table_inserter(&run, &table)?;
    let defaults = crate::sql::defaults::Defaults::for_statement(&run, &table, &targets).await?;
    let ncols = targets.len();
    let progress = run.ctx.report_progress(ProgressCommand::Copy, table.oid);
    progress.set(copy_progress::COMMAND, copy_progress::FROM);
    progress.set(copy_progress::TYPE, copy_progress::PIPE);
    let mut copy = CopyIn {
        run,
        guard: Some(guard),
        table,
        targets,
        parser,
        columns: parsers,
        inserter,
        defaults,
        error: None,
        progress,
        bytes: 0,
    };
    match target {
        CopyTarget::Stdin => {
            session.copy_in = Some(copy);
            Ok(Outcome::CopyIn { columns: ncols })
        }
        CopyTarget::File { filename } => {
            let file = std::fs::File::open(filename).map_err(|e| {
                PgError::io(
                    &format!("could not open file \"{filename}\" for reading"),
                    &e,
                )
            })?;
            copy.progress.set(copy_progress::TYPE, copy_progress::FILE);
            let size = file.metadata().map_or(0, |m| m.len());
            copy.progress.set(copy_progress::BYTES_TOTAL, size);
            let mut reader = std::io::BufReader::with_capacity(FILE_CHUNK_BYTES, file);
            loop {
                use std::io::BufRead;
                let chunk = reader.fill_buf().map_err(|e| {
                    PgError::io(&format!("could not read from file \"{filename}\""), &e)
                })?;
                if chunk.is_empty() {
                    break;
                }
                let n = chunk.len();
                copy.data(&chunk.to_vec());
                reader.consume(n);
                if copy.error.is_some() {
                    break;
                }
            }
            copy.done().map(Outcome::Done)
        }
        _ => Err(PgError::unsupported("COPY FROM PROGRAM is not supported")),
    }
}

impl CopyIn {
    /// Takes a chunk of data; remembers the first error.
    fn data(&mut self, chunk: &[u8]) {
        if self.error.is_some() {
            return;
        }
        self.parser.feed(chunk);
        self.bytes += chunk.len() as u64;
        self.progress
            .set(copy_progress::BYTES_PROCESSED, self.bytes);
        if let Err(e) = self.drain_rows() {
            self.error = Some(e);
        }
    }

    fn drain_rows(&mut self) -> PgResult<()> {
        self.run.ctx.check_cancel()?;
        loop {
            let fmt = &self.run.text_format;
            let row = match self.parser.next_row() {
                Ok(Some(row)) => row,
                Ok(None) => return Ok(()),
                Err(e) => return Err(e.with_context(self.parser.error_context(&self.table.name))),
            };
            let mut failure = None;
            for (i, parser) in self.columns.iter_mut().enumerate() {
                if let Err(e) = parser.append(row.get(i), fmt) {
                    failure = Some((i, e, row.get(i).map(str::to_string)));
                    break;
                }
            }
            if let Some((i, e, value)) = failure {
                let column = &self.table.columns[self.targets[i]].name;
                let context = iolab_engine::values::copy_format::column_context(
                    &self.table.name,
                    self.parser.line_number(),
                    column,
                    value.as_deref(),
                );
                return Err(e.with_context(context));
            }
            if self.columns[0].len() >= COPY_BATCH_ROWS {
                self.flush()?;
            }
        }
    }

    /// Appends the parsed rows to the heap.
    fn flush(&mut self) -> PgResult<()> {
        let rows = self.columns.first().map(|c| c.len()).unwrap_or(0);
        if rows == 0 {
            return Ok(());
        }
        let arrays: Vec<ArrayRef> = self.columns.iter_mut().map(|c| c.finish()).collect();
        let full = complete_rows(
            &self.table,
            &self.targets,
            arrays,
            rows,
            &self.run.text_format,
            &self.defaults,
        )?;
        let before = self.inserter.inserted;
        tokio::task::block_in_place(|| self.inserter.insert_arrays(&full, rows))?;
        self.progress
            .set(copy_progress::TUPLES_PROCESSED, self.inserter.inserted);
        if before / PROGRESS_EVERY_ROWS != self.inserter.inserted / PROGRESS_EVERY_ROWS {
            tracing::info!(table = %self.table.name, rows = self.inserter.inserted, "COPY in progress");
        }
        Ok(())
    }

    /// CopyDone: the remaining rows, then commit; returns the tag `COPY n`.
    fn done(mut self) -> PgResult<String> {
        let result = match self.error.take() {
            Some(e) => Err(e),
            None => {
                self.parser.finish_input();
                self.drain_rows().and_then(|_| self.flush())
            }
        };
        self.inserter.finish();
        self.run.ctx.add_usage(&self.inserter.acct.usage);
        let guard = self.guard.take().expect("a COPY has its guard until done");
        guard.finish(result.is_ok())?;
        result.map(|_| format!("COPY {}", self.inserter.inserted))
    }
}

pub async fn on_data(session: &mut Session, data: &[u8]) {
    if let Some(copy) = session.copy_in.as_mut() {
        copy.data(data);
    }
}

pub async fn on_done(session: &mut Session) -> PgResult<String> {
    let done = match session.copy_in.take() {
        Some(copy) => copy.done(),
        None => Err(crate::session::not_in_copy()),
    };
    copy_ended(session);
    done
}

/// CopyFail from the client: abort (dropping the guard aborts the transaction).
pub fn on_fail(session: &mut Session) {
    session.copy_in = None;
    copy_ended(session);
}

/// A COPY FROM STDIN outside a block was its own transaction: its table locks go.
fn copy_ended(session: &mut Session) {
    if !session.txn.in_block {
        let db = session.server.db.clone();
        session.relation_locks.release(&db);
    }
}

/// COPY table|query TO STDOUT.
async fn copy_to(
    run: &StatementRun,
    source: &CopySource,
    target: &CopyTarget,
    pairs: &[(String, Option<String>)],
) -> PgResult<Outcome> {
    if !matches!(target, CopyTarget::Stdout) {
        return Err(PgError::unsupported(
            "COPY TO a file or program is not supported; use COPY … TO STDOUT (psql's \\copy)",
        ));
    }
    let opts =
        CopyOptions::from_pairs_for(pairs, iolab_engine::values::copy_format::CopyDirection::To)?;
    if opts.format == CopyFormat::Binary {
        return Err(PgError::unsupported(
            "COPY TO in binary format is not supported yet",
        ));
    }
    // The table read (0 for a query, as PostgreSQL's progress shows it).
    let mut relid = 0;
    let query = match source {
        CopySource::Query(q) => ast::Statement::Query(q.clone()),
        CopySource::Table {
            table_name,
            columns,
        } => {
            let (schema, name) = split_name(table_name)?;
            if crate::sql::view::is_view(&run.db, schema.as_deref(), &name) {
                return Err(crate::sql::view::wrong_kind(format!(
                    "cannot copy from view \"{name}\""
                ))
                .with_hint("Try the COPY (SELECT ...) TO variant."));
            }
            let table = run.resolve_table(schema.as_deref(), &name)?;
            relid = table.oid;
            let cols = if columns.is_empty() {
                table
                    .columns
                    .iter()
                    .map(|c| format!("\"{}\"", c.name.replace('"', "\"\"")))
                    .collect::<Vec<_>>()
            } else {
                columns
                    .iter()
                    .map(|c| format!("\"{}\"", ident_name(c).replace('"', "\"\"")))
                    .collect()
            };
            let sql = format!(
                "SELECT {} FROM \"{}\".\"{}\"",
                cols.join(", "),
                table.schema,
                table.name
            );
            crate::sql::parse(&sql, &sql, 0)?.into_statement()
        }
    };
    let stream = counting_rows_sent(run.query_stream(&query).await?, &run.ctx, relid);
    let columns: Vec<String> = stream
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let encoder = CopyEncoder::new(&opts, columns.clone());
    Ok(Outcome::CopyOut {
        columns: columns.len(),
        stream,
        encoder,
        text_format: run.text_format.clone(),
    })
}

/// A COPY TO's rows, counted in `pg_stat_progress_copy` as they are produced (the row
/// ends with the stream). Bytes are not counted: they are encoded as they are sent.
fn counting_rows_sent(
    stream: SendableRecordBatchStream,
    ctx: &StatementContext,
    relid: u32,
) -> SendableRecordBatchStream {
    let progress = ctx.report_progress(ProgressCommand::Copy, relid);
    progress.set(copy_progress::COMMAND, copy_progress::TO);
    progress.set(copy_progress::TYPE, copy_progress::PIPE);
    let mut rows = 0;
    let schema = stream.schema();
    let counted = stream.inspect(move |batch| {
        if let Ok(batch) = batch {
            rows += batch.num_rows();
            progress.set(copy_progress::TUPLES_PROCESSED, rows);
        }
    });
    Box::pin(RecordBatchStreamAdapter::new(schema, counted))
}

/// Formats a COPY TO stream's batches into CopyData payloads, one per row.
pub fn encode_copy_batch(
    encoder: &mut CopyEncoder,
    batch: &datafusion::arrow::record_batch::RecordBatch,
    fmt: &TextFormat,
    first: bool,
) -> Vec<Bytes> {
    let mut out = Vec::with_capacity(batch.num_rows() + 1);
    if first {
        let mut header = Vec::new();
        encoder.write_header(&mut header);
        if !header.is_empty() {
            out.push(Bytes::from(header));
        }
    }
    for row in 0..batch.num_rows() {
        let mut line = Vec::with_capacity(64);
        encoder.write_row(batch.columns(), row, fmt, &mut line);
        out.push(Bytes::from(line));
    }
    out
}

/// COPY's options as `(name, value)` pairs, from both the `WITH (…)` and the pre-9.0 syntax.
/// COPY's text with the values of its Boolean options spelled as sqlparser reads them:
/// PostgreSQL takes `FREEZE on`, `HEADER 1`, `(freeze 'off')` — any of true, false, on,
/// off, 1, 0 — where sqlparser takes only TRUE and FALSE (pgbench sends `with (freeze
/// on)`). `None` when there is nothing to respell.
pub fn spell_boolean_options(text: &str) -> Option<String> {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
    let mut tokens = Tokenizer::new(&PostgreSqlDialect {}, text)
        .tokenize()
        .ok()?;
    let mut option: Option<String> = None;
    let mut respelled = false;
    for token in tokens.iter_mut() {
        if matches!(token, Token::Whitespace(_)) {
            continue;
        }
        let after_boolean_option = matches!(option.as_deref(), Some("FREEZE" | "HEADER"));
        let value = match &*token {
            // TRUE and FALSE are sqlparser's already.
            Token::Word(w) if w.quote_style.is_none() => {
                Some(w.value.to_ascii_lowercase()).filter(|v| v != "true" && v != "false")
            }
            Token::Number(n, _) => Some(n.clone()),
            Token::SingleQuotedString(s) => Some(s.to_ascii_lowercase()),
            _ => None,
        };
        let spelled = match value.as_deref() {
            Some("on" | "1" | "true") if after_boolean_option => Some("TRUE"),
            Some("off" | "0" | "false") if after_boolean_option => Some("FALSE"),
            _ => None,
        };
        if let Some(word) = spelled {
            *token = Token::make_keyword(word);
            respelled = true;
        }
        option = match &*token {
            Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
            _ => None,
        };
    }
    respelled.then(|| tokens.iter().map(|t| t.to_string()).collect())
}

fn option_pairs(
    options: &[CopyOption],
    legacy: &[CopyLegacyOption],
) -> PgResult<Vec<(String, Option<String>)>> {
    let idents =
        |ids: &[ast::Ident]| Some(ids.iter().map(ident_name).collect::<Vec<_>>().join(", "));
    let mut pairs = Vec::new();
    for o in options {
        pairs.push(match o {
            CopyOption::Format(f) => ("format".into(), Some(f.value.to_lowercase())),
            CopyOption::Freeze(b) => ("freeze".into(), Some(b.to_string())),
            CopyOption::Delimiter(c) => ("delimiter".into(), Some(c.to_string())),
            CopyOption::Null(s) => ("null".into(), Some(s.clone())),
            CopyOption::Header(b) => ("header".into(), Some(b.to_string())),
            CopyOption::Quote(c) => ("quote".into(), Some(c.to_string())),
            CopyOption::Escape(c) => ("escape".into(), Some(c.to_string())),
            CopyOption::ForceQuote(ids) => ("force_quote".into(), idents(ids)),
            CopyOption::ForceNotNull(ids) => ("force_not_null".into(), idents(ids)),
            CopyOption::ForceNull(ids) => ("force_null".into(), idents(ids)),
            CopyOption::Encoding(s) => ("encoding".into(), Some(s.clone())),
        });
    }
    for o in legacy {
        match o {
            CopyLegacyOption::Binary => pairs.push(("format".into(), Some("binary".into()))),
            CopyLegacyOption::Delimiter(c) => pairs.push(("delimiter".into(), Some(c.to_string()))),
            CopyLegacyOption::Null(s) => pairs.push(("null".into(), Some(s.clone()))),
            CopyLegacyOption::Csv(csv) => {
                pairs.push(("format".into(), Some("csv".into())));
                for c in csv {
                    pairs.push(match c {
                        CopyLegacyCsvOption::Header => ("header".into(), Some("true".into())),
                        CopyLegacyCsvOption::Quote(q) => ("quote".into(), Some(q.to_string())),
                        CopyLegacyCsvOption::Escape(e) => ("escape".into(), Some(e.to_string())),
                        CopyLegacyCsvOption::ForceQuote(ids) => ("force_quote".into(), idents(ids)),
                        CopyLegacyCsvOption::ForceNotNull(ids) => {
                            ("force_not_null".into(), idents(ids))
                        }
                    });
                }
            }
            other => {
                return Err(PgError::new(
                    sqlstate::SYNTAX_ERROR,
                    format!("COPY option \"{other}\" is not supported"),
                ));
            }
        }
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::spell_boolean_options;

    #[test]
    fn boolean_options_are_spelled_as_sqlparser_reads_them() {
        assert_eq!(
            spell_boolean_options("copy t from stdin with (freeze on)").as_deref(),
            Some("copy t from stdin with (freeze TRUE)")
        );
        assert_eq!(
            spell_boolean_options("COPY t TO STDOUT (FORMAT csv, HEADER 0, freeze 'on')")
                .as_deref(),
            Some("COPY t TO STDOUT (FORMAT csv, HEADER FALSE, freeze TRUE)")
        );
        // Already sqlparser's spelling, or not a Boolean option's value: left alone.
        assert_eq!(
            spell_boolean_options("COPY t FROM STDIN (HEADER true)"),
            None
        );
        assert_eq!(
            spell_boolean_options("COPY t FROM STDIN (FORMAT csv, NULL '1')"),
            None
        );
        assert_eq!(spell_boolean_options("COPY on FROM STDIN"), None);
    }
}
