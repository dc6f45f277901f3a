//! `EXPLAIN`, in PostgreSQL 18's layout.
//!
//! ```text
//!   EXPLAIN (ANALYZE, BUFFERS) SELECT count(*) FROM t
//!     │
//!     ├─ options.rs     the option list, PostgreSQL's defaults and errors
//!     ├─ plan the statement exactly as the session runs it (same SessionState and
//!     │  StatementContext), keep the physical plan
//!     ├─ ANALYZE: instrument.rs wraps every node; the plan runs to completion, rows
//!     │  are discarded (or, with SERIALIZE, converted for the wire and counted)
//!     ├─ mapping.rs     DataFusion nodes → PostgreSQL nodes (Seq Scan, Aggregate, Hash
//!     │                 Join …), exprs.rs writes their expressions, costs.rs estimates
//!     │                 their costs, the scans' metrics give the buffer counts
//!     └─ text.rs / structured.rs   the text format, or JSON / YAML / XML
//! ```
//!
//! The result is PostgreSQL's: one column named `QUERY PLAN`, one row per line in the
//! text format, one row holding the whole document otherwise; the column is a `json` for
//! FORMAT JSON and an `xml` for FORMAT XML (so that a client decodes the document), a
//! `text` otherwise.
//!
//! `EXPLAIN ANALYZE` of a SELECT changes nothing. `EXPLAIN ANALYZE` of an INSERT inserts,
//! as in PostgreSQL. Other statements are not explainable yet (0A000).
//!
//! With RETURNING, the ModifyTable node takes its source's estimates (rows, width) as
//! PostgreSQL's does, VERBOSE shows the list as its `Output:`, and ANALYZE's actual rows
//! are the rows changed; the list is planned (and so checked) but not computed.

pub mod costs;
pub mod exprs;
pub mod hash_table;
pub mod instrument;
pub mod mapping;
pub mod metrics;
pub mod node;
pub mod options;
pub mod qual_order;
pub mod structured;
pub mod text;
pub mod window_frame;

use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::array::StringArray;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::sql::sqlparser::ast;
use futures::StreamExt;
use iolab_catalog::{PgError, PgResult, TableDef};
use iolab_settings::SessionSettings;
use pgwire::api::results::FieldFormat;

use crate::errors::from_datafusion;
use crate::explain::costs::CostParams;
use crate::explain::mapping::Mapper;
use crate::explain::node::{Actual, Buffers, Child, Costs, Detail, Explained, PlanNode, Relation};
use crate::explain::options::{ExplainOptions, Format, Serialize};
use crate::sql::ddl::ident_name;
use crate::sql::returning::{self, Returning};
use crate::sql::{generic_plan, insert, Outcome, StatementRun};

/// The result's one column, for a plan in `format`.
pub fn result_schema(format: Format) -> SchemaRef {
    let column = Field::new("QUERY PLAN", DataType::Utf8, false);
    let column = match format {
        Format::Json => crate::wire::encode::reported_as(column, pgwire::api::Type::JSON),
        Format::Xml => crate::wire::encode::reported_as(column, pgwire::api::Type::XML),
        Format::Text | Format::Yaml => column,
    };
    Arc::new(Schema::new(vec![column]))
}

/// Checks the options of an `EXPLAIN` when it is parsed, so that errors carry the
/// position of the offending option as PostgreSQL's do. `text` is the statement, at
/// `offset` in the query string `whole`.
pub fn check_options(
    stmt: &ast::Statement,
    text: &str,
    whole: &str,
    offset: usize,
) -> PgResult<()> {
    if !matches!(stmt, ast::Statement::Explain { .. }) {
        return Ok(());
    }
    match ExplainOptions::from_statement(stmt) {
        Ok(_) => Ok(()),
        Err(e) => {
            let mut err = *e.error;
            if let Some((line, column)) = e.at {
                if let Some(p) = char_position(text, line as usize, column as usize) {
                    err.position = Some(whole[..offset].chars().count() + p);
                }
            }
            Err(err)
        }
    }
}

fn char_position(text: &str, line: usize, column: usize) -> Option<usize> {
    let mut pos = 0;
    for (i, l) in text.split('\n').enumerate() {
        if i + 1 == line {
            return Some(pos + column);
        }
        pos += l.chars().count() + 1;
    }
    None
}

/// Does running this statement write (EXPLAIN ANALYZE of an INSERT, UPDATE or DELETE)?
pub fn writes(stmt: &ast::Statement) -> bool {
    let ast::Statement::Explain { statement, .. } = stmt else {
        return false;
    };
    matches!(
        **statement,
        ast::Statement::Insert(_) | ast::Statement::Update(_) | ast::Statement::Delete(_)
    ) && ExplainOptions::from_statement(stmt).is_ok_and(|o| o.analyze)
}

/// Runs an `EXPLAIN` statement.
pub async fn run(
    run: &StatementRun,
    settings: &SessionSettings,
    stmt: &ast::Statement,
) -> PgResult<Outcome> {
    let opts = ExplainOptions::from_statement(stmt).map_err(|e| *e.error)?;
    let ast::Statement::Explain { statement, .. } = stmt else {
        return Err(PgError::internal("not an EXPLAIN statement"));
    };
    let returning = match returning::target_of(&run.db, run.temp.schema(), statement)? {
        Some((target, items)) => Some(Returning::plan(run, &target, items).await?),
        None => None,
    };
    let explainer = Explainer {
        run,
        opts: &opts,
        costs: CostParams::from_settings(settings),
        returning: returning.as_ref(),
    };
    let mut explained = match statement.as_ref() {
        ast::Statement::Query(_) => explainer.query(statement).await?,
        ast::Statement::Insert(ins) => explainer.insert(ins).await?,
        ast::Statement::Update(_) | ast::Statement::Delete(_) => {
            explainer.modify(statement).await?
        }
        other => {
            return Err(PgError::unsupported(format!(
                "EXPLAIN of {} is not supported",
                statement_kind(other)
            )));
        }
    };
    if opts.settings {
        explained.settings = Some(
            settings
                .explain_settings()
                .into_iter()
                .map(|(n, v)| (n.to_string(), v))
                .collect(),
        );
    }
    if opts.buffers {
        // The catalog is in memory; planning touches buffers only for index meta pages.
        explained.planning_buffers = Some(Buffers {
            usage: *run.ctx.planning_usage.lock(),
            track_io_timing: run.ctx.track_io_timing,
        });
    }
    explained.triggers = opts.analyze;
    if !opts.summary {
        explained.planning_time_ms = None;
        explained.execution_time_ms = None;
    }
    let rows: Vec<String> = match opts.format {
        Format::Text => text::render(&explained),
        f => vec![structured::render(&explained, f)],
    };
    let schema = result_schema(opts.format);
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(StringArray::from(rows))])
        .map_err(|e| PgError::internal(e.to_string()))?;
    let stream =
        datafusion::physical_plan::memory::MemoryStream::try_new(vec![batch], schema.clone(), None)
            .map_err(from_datafusion)?;
    Ok(Outcome::Rows {
        schema,
        stream: Box::pin(stream),
        tag: "EXPLAIN",
    })
}

fn statement_kind(stmt: &ast::Statement) -> String {
    let text = stmt.to_string();
    let words: Vec<&str> = text.split_whitespace().take(2).collect();
    match words.first().map(|w| w.to_ascii_uppercase()) {
        Some(w) if w == "CREATE" || w == "DROP" => words.join(" ").to_ascii_uppercase(),
        Some(w) => w,
        None => "this statement".into(),
    }
}

struct Explainer<'a> {
    run: &'a StatementRun,
    opts: &'a ExplainOptions,
    costs: CostParams,
    /// The RETURNING list of an INSERT, UPDATE or DELETE.
    returning: Option<&'a Returning>,
}

/// A planned statement: its physical plan, how long planning took and the names the
/// query gives its tables.
struct Planned {
    plan: Arc<dyn ExecutionPlan>,
    planning_ms: f64,
    aliases: Vec<mapping::ScanName>,
    /// `mapping::subquery_relations` of the query.
    subquery_relations: usize,
}

impl Explainer<'_> {
    /// Plans a query as `StatementRun::query_stream` does (`query_stream_in_order` with
    /// `in_order`: an INSERT's source), stopping at the physical plan.
    async fn plan(&self, query: &ast::Statement, in_order: bool) -> PgResult<Planned> {
        let started = Instant::now();
        let logical = self.run.logical_plan(query).await?;
        let optimized = self.run.optimize(&logical)?;
        let aliases = mapping::scan_aliases(&logical, &optimized);
        let subquery_relations = mapping::subquery_relations(&logical);
        let generic = match (in_order, self.opts.generic_plan) {
            (true, _) => None,
            // The plan of the statement for any values of its `$n`, as a prepared
            // statement's generic plan is made (`sql::generic_plan`).
            (false, true) if optimized.get_parameter_types().is_ok_and(|p| !p.is_empty()) => {
                let planned = generic_plan::with_markers(&optimized, &self.run.state).await;
                Some(planned.map_err(|e| {
                    let e = e.strip_backtrace();
                    let reason = e.trim_start_matches("Error during planning: ");
                    PgError::unsupported(format!(
                        "EXPLAIN (GENERIC_PLAN) of this statement is not supported: {reason}"
                    ))
                })?)
            }
            (false, _) => self.run.generic_run(query).await?,
        };
        let mut plan = match (generic, in_order) {
            (Some(generic), _) => generic,
            (None, true) => self.run.planner_in_one_partition(&optimized).await?,
            (None, false) => self.run.physical_plan_of_optimized(&optimized).await?,
        };
        let planning_ms = ms_since(started);
        if self.opts.analyze {
            plan = instrument::instrument(plan, self.opts.timing).map_err(from_datafusion)?;
        }
        Ok(Planned {
            plan,
            planning_ms,
            aliases,
            subquery_relations,
        })
    }

    fn mapper<'m>(&'m self, planned: &Planned) -> Mapper<'m> {
        Mapper::new(
            &self.run.db,
            self.opts,
            self.costs,
            self.run.ctx.track_io_timing,
            &planned.plan,
            planned.aliases.clone(),
            planned.subquery_relations,
        )
    }

    async fn query(&self, query: &ast::Statement) -> PgResult<Explained> {
        let planned = self.plan(query, false).await?;
        let mut explained = Explained {
            planning_time_ms: Some(planned.planning_ms),
            ..Default::default()
        };
        if self.opts.analyze {
            let started = Instant::now();
            let serialized = self.execute(&planned.plan).await?;
            explained.execution_time_ms = Some(ms_since(started));
            explained.serialization = serialized;
        }
        explained.plan = self.mapper(&planned).map(&planned.plan);
        Ok(explained)
    }

    /// Runs the plan to completion, discarding its rows (SERIALIZE: after converting
    /// them as the wire would).
    async fn execute(
        &self,
        plan: &Arc<dyn ExecutionPlan>,
    ) -> PgResult<Option<node::Serialization>> {
        let mut stream =
            datafusion::physical_plan::execute_stream(plan.clone(), self.run.state.task_ctx())
                .map_err(from_datafusion)?;
        let format = match self.opts.serialize {
            Serialize::None => None,
            Serialize::Text => Some(FieldFormat::Text),
            Serialize::Binary => Some(FieldFormat::Binary),
        };
        let fields = format.map(|f| crate::wire::encode::fields(&plan.schema(), |_| f));
        let mut serialize_ns = 0u128;
        let mut bytes = 0u64;
        while let Some(batch) = stream.next().await {
            let batch = batch.map_err(from_datafusion)?;
            if let Some(fields) = &fields {
                let started = Instant::now();
                for row in crate::wire::encode::encode_batch(&batch, fields, &self.run.text_format)
                {
                    bytes += 2 + row.data.len() as u64;
                }
                serialize_ns += started.elapsed().as_nanos();
            }
        }
        drop(stream);
        wait_for_scans(plan).await;
        Ok(format.map(|f| node::Serialization {
            time_ms: self.opts.timing.then(|| serialize_ns as f64 / 1e6),
            bytes,
            format: if f == FieldFormat::Text {
                "text"
            } else {
                "binary"
            },
            buffers: self.opts.buffers.then(|| Buffers {
                track_io_timing: self.run.ctx.track_io_timing,
                ..Buffers::default()
            }),
        }))
    }

    /// `Insert on t` over the plan of the rows inserted.
    async fn insert(&self, ins: &ast::Insert) -> PgResult<Explained> {
        let prepared = insert::prepare(self.run, ins).await?;
        let Some(source) = &prepared.source else {
            return Err(PgError::unsupported(
                "EXPLAIN of INSERT … DEFAULT VALUES is not supported",
            ));
        };
        let table = &prepared.table;
        let mut planned = self
            .plan(&ast::Statement::Query(source.clone()), true)
            .await?;
        // The target takes the table's name; PostgreSQL renames reads of the same table
        // in the source `t_1`, `t_2` …
        let mut renamed = 0;
        for mapping::ScanName { alias, .. } in planned.aliases.iter_mut() {
            if *alias == table.name {
                renamed += 1;
                *alias = format!("{}_{renamed}", table.name);
            }
        }
        let alias = ins.table_alias.as_ref().map(|a| ident_name(&a.alias));
        self.modify_table(planned, table, alias, Change::Insert(&prepared))
            .await
    }

    /// EXPLAIN of a DELETE or UPDATE: the query that finds its rows under a ModifyTable
    /// node; with ANALYZE the rows are changed.
    async fn modify(&self, stmt: &ast::Statement) -> PgResult<Explained> {
        let found = crate::sql::dml::row_query(&self.run.db, self.run.temp.schema(), stmt, true)?
            .expect("a DELETE or UPDATE");
        let planned = self.plan(&found.query, false).await?;
        self.modify_table(planned, &found.table, found.alias, Change::Modify(stmt))
            .await
    }

    /// The ModifyTable node of `change` to `table` over `planned` (the rows it takes), run
    /// with ANALYZE.
    async fn modify_table(
        &self,
        planned: Planned,
        table: &TableDef,
        alias: Option<String>,
        change: Change<'_>,
    ) -> PgResult<Explained> {
        let mut explained = Explained {
            planning_time_ms: Some(planned.planning_ms),
            ..Default::default()
        };
        let mut actual = None;
        let mut buffers = None;
        let mut wal = None;
        let mut inserted = None;
        if self.opts.analyze {
            let started = Instant::now();
            let stream = datafusion::physical_plan::execute_stream(
                planned.plan.clone(),
                self.run.state.task_ctx(),
            )
            .map_err(from_datafusion)?;
            let changed = match change {
                Change::Insert(prepared) => {
                    let counts = prepared.write(self.run, stream, None).await?;
                    inserted = Some(counts);
                    counts.written()
                }
                Change::Modify(stmt) => {
                    crate::sql::dml::apply(self.run, stmt, table, stream).await?
                }
            };
            wait_for_scans(&planned.plan).await;
            let ms = ms_since(started);
            explained.execution_time_ms = Some(ms);
            actual = Some(Actual {
                times_ms: self.opts.timing.then_some((ms, ms)),
                // With RETURNING the node gives a row for each row changed.
                rows: match self.returning {
                    Some(_) => changed as f64,
                    None => 0.0,
                },
                loops: 1,
            });
            // Everything the statement did: the source's scans and the changes.
            let u = *self.run.ctx.usage.lock();
            if self.opts.buffers {
                buffers = Some(Buffers {
                    usage: u,
                    track_io_timing: self.run.ctx.track_io_timing,
                });
            }
            if self.opts.wal {
                wal = Some(node::Wal {
                    records: u.wal_records,
                    fpi: u.wal_fpi,
                    bytes: u.wal_bytes,
                    buffers_full: u.wal_buffers_full,
                });
            }
        }
        let source_node = self.mapper(&planned).map(&planned.plan);
        let operation = match change {
            Change::Insert(_) => "Insert",
            Change::Modify(ast::Statement::Delete(_)) => "Delete",
            Change::Modify(_) => "Update",
        };
        explained.plan = PlanNode {
            node_type: "ModifyTable".into(),
            text_name: operation.into(),
            operation: Some(operation),
            relation: Some(Relation {
                object_tag: Some("Relation Name"),
                object_name: Some(table.name.clone()),
                schema: self.opts.verbose.then(|| table.schema.clone()),
                alias: alias.unwrap_or_else(|| table.name.clone()),
            }),
            // With RETURNING PostgreSQL gives the node its source's rows and width.
            costs: match self.returning {
                Some(_) => source_node.costs,
                None => source_node.costs.map(|c| Costs {
                    rows: 0.0,
                    width: 0,
                    ..c
                }),
            },
            output: self
                .returning
                .filter(|_| self.opts.verbose)
                .map(Returning::output),
            actual,
            buffers,
            wal,
            details: match change {
                Change::Insert(prepared) => on_conflict_details(prepared, inserted),
                Change::Modify(_) => Vec::new(),
            },
            children: vec![Child {
                relationship: "Outer",
                node: source_node,
            }],
            ..Default::default()
        };
        Ok(explained)
    }
}

/// The ModifyTable lines of an INSERT's ON CONFLICT, as PostgreSQL 18 prints them; with
/// ANALYZE (`counts`) what it did.
fn on_conflict_details(
    prepared: &insert::PreparedInsert,
    counts: Option<insert::InsertCounts>,
) -> Vec<Detail> {
    let Some(clause) = &prepared.on_conflict else {
        return Vec::new();
    };
    let mut details = vec![Detail::Expr {
        label: "Conflict Resolution",
        text: clause.resolution().to_string(),
    }];
    if let Some(names) = &clause.shown_arbiters {
        details.push(Detail::List {
            label: "Conflict Arbiter Indexes",
            items: names.clone(),
        });
    }
    if let Some(filter) = &clause.filter {
        details.push(Detail::Expr {
            label: "Conflict Filter",
            text: filter.clone(),
        });
        if let Some(counts) = counts {
            details.push(Detail::Removed {
                label: "Rows Removed by Conflict Filter",
                rows: counts.filtered as f64,
            });
        }
    }
    if let Some(counts) = counts {
        details.push(Detail::Count {
            label: "Tuples Inserted",
            value: counts.inserted,
        });
        details.push(Detail::Count {
            label: "Conflicting Tuples",
            value: counts.conflicting,
        });
    }
    details
}

/// What a ModifyTable node does: insert its source's rows into these columns, or apply
/// a DELETE or UPDATE to them.
enum Change<'s> {
    Insert(&'s insert::PreparedInsert),
    Modify(&'s ast::Statement),
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

/// Waits (briefly) until every scan of `plan` has published its counters.
async fn wait_for_scans(plan: &Arc<dyn ExecutionPlan>) {
    let deadline = Instant::now() + std::time::Duration::from_secs(5);
    while !mapping::scans_done(plan) && Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
}

#[cfg(test)]
mod tests;
