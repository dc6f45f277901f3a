//! Running ALTER TABLE / INDEX / SEQUENCE / VIEW (the grammar is `alter_parse.rs`).
//!
//! What each statement changes, and how ROLLBACK undoes it (`ddl_log.rs`):
//!
//! - **RENAME TO** renames any relation (ALTER TABLE and ALTER INDEX take every kind, as
//!   in PostgreSQL; ALTER VIEW and ALTER SEQUENCE only their own). Logged with the old
//!   name.
//! - **Column subcommands and SET / RESET of a table** run one after the other, as one
//!   unit: each reads the table's catalog state (`iolab_catalog::alter::TableState`),
//!   changes it in memory, logs the state from before and writes the new one. A failing
//!   subcommand fails the statement, whose rollback puts back the states of those before
//!   it. None of them rewrites the table:
//!   - ADD COLUMN appends the column; the existing tuples, which store fewer attributes,
//!     read NULL for it, or the default's value computed once now (PostgreSQL's
//!     `attmissingval`, see `iolab_catalog::attributes`). A volatile default (`random()`,
//!     `nextval`, `serial`, identity) would need a value per existing row, which
//!     PostgreSQL gets by rewriting the table; iolab refuses it with 0A000 unless the table
//!     is empty. NOT NULL without a non-NULL default fails on a non-empty table (23502).
//!   - DROP COLUMN keeps the column's attribute in the tuples (its data is skipped, new
//!     tuples store NULL there); the indexes on the column and the sequence it owns go
//!     with it, as do — with CASCADE — the views that read it. A table's only column
//!     cannot be dropped (PostgreSQL allows a table of no columns; iolab does not).
//!
//!   Undoing an ADD COLUMN leaves its attribute as a dropped column's: rows other
//!   sessions committed meanwhile may store it (`iolab_catalog::alter`).
//!   - SET NOT NULL reads the table for a NULL first (23502 if a live row has one).
//! - **ALTER INDEX … SET / RESET** changes an index's storage parameters (which take
//!   effect at the next build, as in PostgreSQL). Logged with the old ones.
//!
//! iolab keeps a view as the text of its query, so renaming a table or a column a view
//! reads would break the view (PostgreSQL's views follow the rename): that is refused
//! (0A000). Which views read a column is judged from the query's words: a view whose query
//! names the column, or selects `*`, reads it.

use std::sync::Arc;

use datafusion::sql::sqlparser::ast::{self, ColumnOption, Ident};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
use iolab_catalog::alter::{RelationKind, TableState};
use iolab_catalog::attributes::{DroppedAttribute, MissingValue};
use iolab_catalog::{
    sqlstate, ColumnDef, ColumnDefault, ConstraintKind, DefaultValue, PgError, PgResult, PgType,
    ViewDef,
};
use iolab_engine::heap::codec::{TupleEncoder, TupleLayout};
use iolab_engine::Database;

use crate::session::Notice;
use crate::sql::alter_parse::{AlterAction, AlterCommand, AlterStatement};
use crate::sql::ddl::{check_identifier, column_type, ident_name, split_name};
use crate::sql::ddl_log::{DdlEntry, DdlLog};
use crate::sql::{reloptions, Outcome, StatementRun};

/// PostgreSQL's limit on a table's attributes (dropped columns count).
const MAX_ATTRIBUTES: usize = 1600;

/// Runs one ALTER statement; returns its command tag.
pub async fn run(
    run: &StatementRun,
    stmt: &AlterStatement,
    log: &mut DdlLog,
    notices: &mut Vec<Notice>,
) -> PgResult<Outcome> {
    let db = &run.db;
    let done = Ok(Outcome::Done(stmt.tag()));
    let (schema, name) = split_name(&stmt.name)?;
    let in_schema = iolab_catalog::Catalog::schema_in(run.temp.schema(), schema.as_deref(), |s| {
        db.catalog.relation(s, &name).is_some()
    });
    let Some((kind, oid)) = db.catalog.relation(&in_schema, &name) else {
        let shown = match &schema {
            Some(s) => format!("{s}.{name}"),
            None => name.clone(),
        };
        if stmt.if_exists {
            notices.push(Notice::notice(format!(
                "relation \"{shown}\" does not exist, skipping"
            )));
            return done;
        }
        return Err(PgError::undefined_table(&shown));
    };
    let is_not = |what: &str| {
        PgError::new(
            sqlstate::WRONG_OBJECT_TYPE,
            format!("\"{name}\" is not {what}"),
        )
    };
    match &stmt.action {
        AlterAction::Rename(new_name) => {
            match (stmt.kind, kind) {
                (RelationKind::View, k) if k != RelationKind::View => return Err(is_not("a view")),
                (RelationKind::Sequence, k) if k != RelationKind::Sequence => {
                    return Err(is_not("a sequence"))
                }
                _ => {}
            }
            rename_relation(db, &in_schema, kind, oid, &name, &ident_name(new_name), log)?;
        }
        AlterAction::RenameColumn { from, to } => {
            if kind != RelationKind::Table {
                return Err(PgError::unsupported(format!(
                    "renaming the columns of {} \"{name}\" is not supported",
                    kind.noun()
                )));
            }
            rename_column(db, oid, &ident_name(from), &ident_name(to), log)?;
        }
        AlterAction::Commands(commands) => {
            if let Some(words) = commands.iter().find_map(|c| match c {
                AlterCommand::Unsupported(words) => Some(words),
                _ => None,
            }) {
                return Err(PgError::unsupported(format!(
                    "{} … {words} is not supported",
                    stmt.tag()
                )));
            }
            match kind {
                RelationKind::Table if stmt.kind == RelationKind::Table => {
                    for command in commands {
                        alter_table(run, oid, command, log, notices).await?;
                    }
                }
                RelationKind::Index => {
                    for command in commands {
                        alter_index_options(db, oid, command, log)?;
                    }
                }
                _ if stmt.kind == RelationKind::Index => return Err(is_not("an index")),
                _ => {
                    let command = &commands[0];
                    if let (RelationKind::View, AlterCommand::SetOptions(options)) = (kind, command)
                    {
                        // A view's own options are not iolab's; others are unknown.
                        let (option, _) = reloptions::name_and_value(&options[0])?;
                        if ["check_option", "security_barrier", "security_invoker"]
                            .contains(&option.as_str())
                        {
                            return Err(PgError::unsupported(format!(
                                "view option \"{option}\" is not supported"
                            )));
                        }
                        return Err(PgError::new(
                            sqlstate::INVALID_PARAMETER_VALUE,
                            format!("unrecognized parameter \"{option}\""),
                        ));
                    }
                    return Err(PgError::new(
                        sqlstate::WRONG_OBJECT_TYPE,
                        format!(
                            "ALTER action {} cannot be performed on relation \"{name}\"",
                            command.action_name()
                        ),
                    )
                    .with_detail(format!(
                        "This operation is not supported for {}.",
                        match kind {
                            RelationKind::Index => "indexes",
                            RelationKind::Sequence => "sequences",
                            RelationKind::View => "views",
                            RelationKind::Table => "tables",
                        }
                    )));
                }
            }
        }
    }
    done
}

/// RENAME TO of relation `oid` (called `name`, of `kind`).
fn rename_relation(
    db: &Arc<Database>,
    schema: &str,
    kind: RelationKind,
    oid: u32,
    name: &str,
    new_name: &str,
    log: &mut DdlLog,
) -> PgResult<()> {
    check_new_name(new_name)?;
    if new_name == name || db.catalog.relation(schema, new_name).is_some() {
        return Err(PgError::new(
            sqlstate::DUPLICATE_TABLE,
            format!("relation \"{new_name}\" already exists"),
        ));
    }
    if matches!(kind, RelationKind::Table | RelationKind::View) {
        if let Some(view) = db.catalog.dependent_views(oid).first() {
            return Err(view_text_refusal(
                format!("cannot rename {} \"{name}\"", kind.noun()),
                view,
            ));
        }
    }
    log.record(
        db,
        DdlEntry::Renamed {
            oid,
            old_name: name.to_string(),
        },
    )?;
    db.catalog.rename_relation(oid, new_name).map(drop)
}

/// A name for a relation or column: PostgreSQL's errors for an empty or too long one.
fn check_new_name(name: &str) -> PgResult<()> {
    if name.is_empty() {
        return Err(PgError::syntax(
            "zero-length delimited identifier at or near \"\"\"\"",
        ));
    }
    check_identifier(name)
}

/// iolab's 0A000 for a change that would break view `view`, which keeps its query as text.
fn view_text_refusal(what: String, view: &ViewDef) -> PgError {
    PgError::unsupported(format!("{what}: view \"{}\" reads it", view.name))
        .with_detail(
            "iolab keeps a view as the text of its query, which would still use the old name.",
        )
        .with_hint("Drop the view, make the change, and create the view again.")
}

/// The table's state, which the statement found a moment ago.
fn state_of(db: &Database, oid: u32) -> PgResult<TableState> {
    db.catalog
        .table_state(oid)
        .ok_or_else(|| PgError::internal(format!("table {oid} was dropped meanwhile")))
}

/// Logs the state from before, then writes the new one.
fn write_state(
    db: &Arc<Database>,
    before: TableState,
    after: TableState,
    log: &mut DdlLog,
) -> PgResult<()> {
    log.record(db, DdlEntry::AlteredTable(Box::new(before)))?;
    db.catalog.put_table_state(after)
}

/// RENAME [COLUMN] from TO to.
fn rename_column(
    db: &Arc<Database>,
    oid: u32,
    from: &str,
    to: &str,
    log: &mut DdlLog,
) -> PgResult<()> {
    let before = state_of(db, oid)?;
    let table = &before.table;
    let Some(index) = table.column_index(from) else {
        return Err(PgError::new(
            sqlstate::UNDEFINED_COLUMN,
            format!("column \"{from}\" does not exist"),
        ));
    };
    check_new_name(to)?;
    if table.column_index(to).is_some() {
        return Err(column_exists(to, &table.name));
    }
    if let Some(view) = views_reading_column(db, oid, from).first() {
        return Err(view_text_refusal(
            format!(
                "cannot rename column \"{from}\" of table \"{}\"",
                table.name
            ),
            view,
        ));
    }
    let mut after = before.clone();
    after.table.columns[index].name = to.to_string();
    for d in after.defaults.iter_mut().filter(|d| d.column == from) {
        d.column = to.to_string();
    }
    for s in &mut after.sequences {
        if let Some(owner) = s.owned_by.as_mut().filter(|o| o.column == from) {
            owner.column = to.to_string();
        }
    }
    write_state(db, before, after, log)
}

fn column_exists(column: &str, table: &str) -> PgError {
    PgError::new(
        sqlstate::DUPLICATE_COLUMN,
        format!("column \"{column}\" of relation \"{table}\" already exists"),
    )
}

fn no_such_column(column: &str, table: &str) -> PgError {
    PgError::new(
        sqlstate::UNDEFINED_COLUMN,
        format!("column \"{column}\" of relation \"{table}\" does not exist"),
    )
}

fn contains_nulls(column: &str, table: &str) -> PgError {
    PgError::new(
        sqlstate::NOT_NULL_VIOLATION,
        format!("column \"{column}\" of relation \"{table}\" contains null values"),
    )
}

/// NOT NULL on column `index` in `after`, unless `before` has it already; the table's
/// rows are checked first (23502 when one holds a NULL there). Whether it was added.
async fn add_not_null(
    run: &StatementRun,
    before: &TableState,
    after: &mut TableState,
    index: usize,
) -> PgResult<bool> {
    let column = &before.table.columns[index];
    if column.not_null {
        return Ok(false);
    }
    let condition = format!("{} IS NULL", quote(&column.name));
    if has_rows(run, &before.table.name, Some(&condition)).await? {
        return Err(contains_nulls(&column.name, &before.table.name));
    }
    after.table.columns[index].not_null = true;
    Ok(true)
}

/// One subcommand of ALTER TABLE on table `oid`.
async fn alter_table(
    run: &StatementRun,
    oid: u32,
    command: &AlterCommand,
    log: &mut DdlLog,
    notices: &mut Vec<Notice>,
) -> PgResult<()> {
    let db = &run.db;
    let before = state_of(db, oid)?;
    let table_name = before.table.name.clone();
    // The live column a subcommand names.
    let column = |id: &Ident| -> PgResult<usize> {
        let name = ident_name(id);
        before
            .table
            .column_index(&name)
            .ok_or_else(|| no_such_column(&name, &table_name))
    };
    let mut after = before.clone();
    match command {
        AlterCommand::AddColumn {
            if_not_exists,
            column,
        } => {
            let name = ident_name(&column.name);
            if before.table.column_index(&name).is_some() {
                if *if_not_exists {
                    notices.push(Notice {
                        code: sqlstate::DUPLICATE_COLUMN,
                        ..Notice::notice(format!(
                            "column \"{name}\" of relation \"{table_name}\" already exists, skipping"
                        ))
                    });
                    return Ok(());
                }
                return Err(column_exists(&name, &table_name));
            }
            add_column(run, &mut after, column).await?;
        }
        AlterCommand::DropColumn {
            if_exists,
            column: id,
            cascade,
        } => {
            let name = ident_name(id);
            let Some(index) = before.table.column_index(&name) else {
                if *if_exists {
                    notices.push(Notice::notice(format!(
                        "column \"{name}\" of relation \"{table_name}\" does not exist, skipping"
                    )));
                    return Ok(());
                }
                return Err(no_such_column(&name, &table_name));
            };
            notices.extend(drop_column(db, &mut after, index, *cascade, log)?);
        }
        AlterCommand::SetDefault { column: id, expr } => {
            let index = column(id)?;
            let name = &before.table.columns[index].name;
            refuse_identity(&before, name)?;
            let value = crate::sql::defaults::parse_default(db, expr)?;
            after.defaults.retain(|d| &d.column != name);
            after.defaults.push(ColumnDefault {
                column: name.clone(),
                value,
                identity: None,
            });
            order_defaults(&mut after);
        }
        AlterCommand::DropDefault { column: id } => {
            let name = &before.table.columns[column(id)?].name;
            refuse_identity(&before, name).map_err(|e| {
                e.with_hint("Use ALTER TABLE ... ALTER COLUMN ... DROP IDENTITY instead.")
            })?;
            after.defaults.retain(|d| &d.column != name);
        }
        AlterCommand::SetNotNull { column: id } => {
            add_not_null(run, &before, &mut after, column(id)?).await?;
        }
        AlterCommand::DropNotNull { column: id } => {
            let index = column(id)?;
            refuse_identity(&before, &before.table.columns[index].name)?;
            after.table.columns[index].not_null = false;
        }
        AlterCommand::SetOptions(options) => {
            let set = reloptions::heap_reloptions(options)?;
            after.table.reloptions = reloptions::set_reloptions(&before.table.reloptions, set);
        }
        AlterCommand::ResetOptions(names) => {
            let names: Vec<String> = names.iter().map(ident_name).collect();
            after.table.reloptions = reloptions::reset_reloptions(&before.table.reloptions, &names);
        }
        AlterCommand::AddConstraint(written) => {
            let key = crate::sql::constraints::from_table_constraint(written)
                .expect("the parser takes PRIMARY KEY and UNIQUE only")?;
            let mut indexes = Vec::with_capacity(key.columns.len());
            for name in &key.columns {
                indexes.push(column(&Ident::new(name)).map_err(|_| {
                    PgError::new(
                        sqlstate::UNDEFINED_COLUMN,
                        format!("column \"{name}\" named in key does not exist"),
                    )
                })?);
            }
            if key.kind == ConstraintKind::PrimaryKey {
                if db.catalog.indexes_of(oid).iter().any(|i| i.is_primary()) {
                    return Err(PgError::new(
                        sqlstate::INVALID_TABLE_DEFINITION,
                        format!("multiple primary keys for table \"{table_name}\" are not allowed"),
                    ));
                }
                let mut changed = false;
                for index in indexes {
                    changed |= add_not_null(run, &before, &mut after, index).await?;
                }
                if changed {
                    write_state(db, before, after.clone(), log)?;
                }
            }
            let created = tokio::task::block_in_place(|| {
                crate::sql::constraints::create(run, &after.table, std::slice::from_ref(&key))
            })?;
            for oid in created {
                log.record(db, DdlEntry::CreatedIndex { oid })?;
            }
            return Ok(());
        }
        AlterCommand::DropConstraint { if_exists, name } => {
            let name = ident_name(name);
            let found = (db.catalog.indexes_of(oid).into_iter())
                .find(|i| i.constraint.is_some() && i.name == name);
            let Some(index) = found else {
                let message =
                    format!("constraint \"{name}\" of relation \"{table_name}\" does not exist");
                if *if_exists {
                    notices.push(Notice::notice(format!("{message}, skipping")));
                    return Ok(());
                }
                return Err(PgError::new(sqlstate::UNDEFINED_OBJECT, message));
            };
            let index_oid = index.oid;
            log.record(db, DdlEntry::DroppedIndex(index))?;
            db.catalog.drop_index(index_oid)?;
            return Ok(());
        }
        AlterCommand::Unsupported(_) => unreachable!("refused before any subcommand ran"),
    }
    if after == before {
        return Ok(());
    }
    write_state(db, before, after, log)
}

/// PostgreSQL's refusal to change the default or nullability of an identity column.
fn refuse_identity(state: &TableState, column: &str) -> PgResult<()> {
    if state
        .defaults
        .iter()
        .any(|d| d.column == column && d.identity.is_some())
    {
        return Err(PgError::syntax(format!(
            "column \"{column}\" of relation \"{}\" is an identity column",
            state.table.name
        )));
    }
    Ok(())
}

/// Keeps the defaults in column order (the catalog's convention).
fn order_defaults(state: &mut TableState) {
    let table = &state.table;
    state
        .defaults
        .sort_by_key(|d| table.column_index(&d.column).unwrap_or(usize::MAX));
}

/// ADD COLUMN `def` to the table of `state` (its name is free).
async fn add_column(
    run: &StatementRun,
    state: &mut TableState,
    def: &ast::ColumnDef,
) -> PgResult<()> {
    let db = &run.db;
    let name = ident_name(&def.name);
    check_new_name(&name)?;
    let table_name = state.table.name.clone();
    let type_text = def.data_type.to_string().to_lowercase();
    let serial = matches!(
        type_text.as_str(),
        "serial" | "serial4" | "bigserial" | "serial8" | "smallserial" | "serial2"
    );
    let ty = if serial {
        None
    } else {
        Some(column_type(&def.data_type)?)
    };
    let mut not_null = false;
    let mut default: Option<&ast::Expr> = None;
    let mut identity = false;
    for option in &def.options {
        match &option.option {
            ColumnOption::NotNull => not_null = true,
            ColumnOption::Null => not_null = false,
            ColumnOption::Default(expr) => {
                if default.is_some() {
                    return Err(PgError::syntax(format!(
                        "multiple default values specified for column \"{name}\" of table \"{table_name}\""
                    )));
                }
                default = Some(expr);
            }
            ColumnOption::Generated {
                generation_expr: None,
                ..
            } => identity = true,
            other => {
                return Err(PgError::unsupported(format!(
                    "column option \"{other}\" is not supported in ALTER TABLE … ADD COLUMN (column \"{name}\")"
                )))
            }
        }
    }
    if state.table.attribute_count() >= MAX_ATTRIBUTES {
        return Err(PgError::new(
            sqlstate::TOO_MANY_COLUMNS,
            format!("tables can have at most {MAX_ATTRIBUTES} columns"),
        ));
    }
    let Some(ty) = ty.filter(|_| !identity) else {
        return Err(PgError::unsupported(format!(
            "ALTER TABLE … ADD COLUMN of a serial or identity column is not supported (column \"{name}\")"
        ))
        .with_hint("Add an integer column, then SET DEFAULT nextval() of a sequence."));
    };
    let value = match default {
        Some(expr) => Some(crate::sql::defaults::parse_default(db, expr)?),
        None => None,
    };
    // The value the existing rows read; `volatile` if each would need its own.
    let mut volatile = None;
    let missing: Option<Vec<u8>> = match &value {
        Some(DefaultValue::NextVal { .. }) => {
            volatile = Some("a nextval() default");
            None
        }
        Some(DefaultValue::Expr { sql }) => {
            match crate::sql::defaults::evaluate_once(run, sql, ty, &name).await? {
                Some(array) => stored_bytes(ty, array)?,
                None => {
                    volatile = Some("a volatile default");
                    None
                }
            }
        }
        None => None,
    };
    let null_for_old_rows = not_null && missing.is_none();
    if (volatile.is_some() || null_for_old_rows) && has_rows(run, &table_name, None).await? {
        return Err(match volatile {
            Some(what) => rewrite_refusal(&name, what),
            None => contains_nulls(&name, &table_name),
        });
    }
    let attnum = state.table.attribute_count() as u16 + 1;
    state.table.columns.push(ColumnDef {
        name: name.clone(),
        ty,
        not_null,
    });
    if let Some(bytes) = missing {
        state
            .table
            .stored
            .missing
            .push(MissingValue { attnum, bytes });
    }
    if let Some(value) = value {
        state.defaults.push(ColumnDefault {
            column: name,
            value,
            identity: None,
        });
    }
    debug_assert_eq!(state.table.attnum(state.table.columns.len() - 1), attnum);
    Ok(())
}

fn rewrite_refusal(column: &str, what: &str) -> PgError {
    PgError::unsupported(format!(
        "cannot add column \"{column}\" with {what} to a table that has rows"
    ))
    .with_detail(
        "Each existing row would need its own value: PostgreSQL rewrites the table for that, iolab does not.",
    )
    .with_hint("Add the column without the default, then UPDATE the rows and SET DEFAULT.")
}

/// A one-row value of type `ty` as a tuple stores it (see `MissingValue`); `None` for
/// NULL.
fn stored_bytes(
    ty: PgType,
    value: datafusion::arrow::array::ArrayRef,
) -> PgResult<Option<Vec<u8>>> {
    assert_eq!(value.len(), 1, "one value");
    let mut encoder = TupleEncoder::new(vec![ty]);
    let mut tuple = Vec::new();
    encoder.encode(&[value], 0, 0, 0, &mut tuple)?;
    let layout = TupleLayout::new(vec![ty]);
    Ok(layout.attribute_bytes(&tuple, 0)?.map(<[u8]>::to_vec))
}

/// DROP COLUMN of live column `index` of the table of `state`; the indexes on it, the
/// sequence it owns and (with `cascade`) the views that read it are dropped and logged
/// first. Returns the notices.
fn drop_column(
    db: &Arc<Database>,
    state: &mut TableState,
    index: usize,
    cascade: bool,
    log: &mut DdlLog,
) -> PgResult<Vec<Notice>> {
    let table = state.table.clone();
    let column = &table.columns[index];
    if table.columns.len() == 1 {
        // PostgreSQL allows a table without columns; iolab's heap writes no tuple for a
        // row of no values.
        return Err(PgError::unsupported(format!(
            "cannot drop column {} of table {}: it is the table's only column",
            column.name, table.name
        ))
        .with_detail("iolab tables keep at least one column."));
    }
    let mut notices = Vec::new();
    let readers = views_reading_column(db, table.oid, &column.name);
    if !readers.is_empty() {
        // The views that read them go too.
        let mut doomed: Vec<ViewDef> = Vec::new();
        let mut lines = Vec::new();
        for view in &readers {
            if !doomed.iter().any(|d| d.oid == view.oid) {
                lines.push(format!(
                    "view {} depends on column {} of table {}",
                    view.name, column.name, table.name
                ));
                doomed.push(view.clone());
            }
            for dependent in db.catalog.dependent_views(view.oid) {
                if !doomed.iter().any(|d| d.oid == dependent.oid) {
                    let on = doomed
                        .iter()
                        .find(|d| dependent.depends_on.contains(&d.oid))
                        .map(|d| d.name.clone())
                        .unwrap_or_else(|| view.name.clone());
                    lines.push(format!("view {} depends on view {on}", dependent.name));
                    doomed.push(dependent);
                }
            }
        }
        if !cascade {
            return Err(PgError::new(
                sqlstate::DEPENDENT_OBJECTS_STILL_EXIST,
                format!(
                    "cannot drop column {} of table {} because other objects depend on it",
                    column.name, table.name
                ),
            )
            .with_detail(lines.join("\n"))
            .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
        }
        for view in doomed.iter().rev() {
            log.record(db, DdlEntry::DroppedView(view.clone()))?;
            db.catalog.drop_view(view.oid)?;
        }
        notices.push(match doomed.as_slice() {
            [view] => Notice::notice(format!("drop cascades to view {}", view.name)),
            many => Notice {
                detail: Some(
                    many.iter()
                        .map(|v| format!("drop cascades to view {}", v.name))
                        .collect::<Vec<_>>()
                        .join("\n"),
                ),
                ..Notice::notice(format!("drop cascades to {} other objects", many.len()))
            },
        });
    }
    // Indexes on the column go; the others' column numbers close the gap.
    let (gone, kept): (Vec<_>, Vec<_>) = state
        .indexes
        .drain(..)
        .partition(|i| i.columns.contains(&index));
    for mut i in kept {
        for c in &mut i.columns {
            if *c > index {
                *c -= 1;
            }
        }
        state.indexes.push(i);
    }
    for i in gone {
        log.record(db, DdlEntry::DroppedIndex(i))?;
    }
    let (gone, kept): (Vec<_>, Vec<_>) = state
        .sequences
        .drain(..)
        .partition(|s| s.owned_by.as_ref().is_some_and(|o| o.column == column.name));
    state.sequences = kept;
    for s in gone {
        log.record(db, DdlEntry::DroppedSequence(s))?;
    }
    state.defaults.retain(|d| d.column != column.name);
    // Statistics are by column number (`attnum` of the live columns).
    if let Some(stats) = &mut state.statistics {
        let dropped = index as i16 + 1;
        stats.columns = std::mem::take(&mut stats.columns)
            .into_iter()
            .filter(|(n, _)| *n != dropped)
            .map(|(n, mut c)| {
                if n > dropped {
                    c.attnum = n - 1;
                }
                (c.attnum, c)
            })
            .collect();
    }
    let attnum = table.attnum(index);
    let stored = &mut state.table.stored;
    stored.missing.retain(|m| m.attnum != attnum);
    let at = stored.dropped.partition_point(|d| d.attnum < attnum);
    stored.dropped.insert(
        at,
        DroppedAttribute {
            attnum,
            ty: column.ty,
        },
    );
    state.table.columns.remove(index);
    Ok(notices)
}

/// ALTER INDEX … SET / RESET (…) on index `oid`.
fn alter_index_options(
    db: &Arc<Database>,
    oid: u32,
    command: &AlterCommand,
    log: &mut DdlLog,
) -> PgResult<()> {
    let index = db
        .catalog
        .index_by_oid(oid)
        .ok_or_else(|| PgError::internal(format!("index {oid} was dropped meanwhile")))?;
    let reloptions = match command {
        AlterCommand::SetOptions(options) => {
            let set = reloptions::btree_reloptions(options)?;
            reloptions::set_reloptions(&index.reloptions, set)
        }
        AlterCommand::ResetOptions(names) => {
            let names: Vec<String> = names.iter().map(ident_name).collect();
            reloptions::reset_reloptions(&index.reloptions, &names)
        }
        other => {
            return Err(PgError::new(
                sqlstate::WRONG_OBJECT_TYPE,
                format!(
                    "ALTER action {} cannot be performed on relation \"{}\"",
                    other.action_name(),
                    index.name
                ),
            )
            .with_detail("This operation is not supported for indexes."))
        }
    };
    log.record(
        db,
        DdlEntry::AlteredIndexOptions {
            oid,
            reloptions: index.reloptions.clone(),
        },
    )?;
    db.catalog.set_index_reloptions(oid, reloptions).map(drop)
}

/// The views that read table `oid` directly and whose query names `column` or selects
/// `*` (see the module comment).
fn views_reading_column(db: &Database, oid: u32, column: &str) -> Vec<ViewDef> {
    db.catalog
        .views()
        .into_iter()
        .filter(|v| v.depends_on.contains(&oid) && query_mentions(&v.query, column))
        .collect()
}

/// Does SQL text `query` name `column` (as an identifier, folded as PostgreSQL folds it)
/// or select `*` (a `*` that is not `count(*)`'s)? Unreadable text counts as yes.
fn query_mentions(query: &str, column: &str) -> bool {
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, query).tokenize() else {
        return true;
    };
    let mut previous: Option<&Token> = None;
    for token in &tokens {
        match token {
            Token::Whitespace(_) => continue,
            Token::Word(w) => {
                let name = if w.quote_style.is_some() {
                    w.value.clone()
                } else {
                    w.value.to_lowercase()
                };
                if name == column {
                    return true;
                }
            }
            Token::Mul if previous != Some(&Token::LParen) => return true,
            _ => {}
        }
        previous = Some(token);
    }
    false
}

fn quote(name: &str) -> String {
    iolab_settings::quote_identifier(name)
}

/// Does table `table` (of `public`) have a live row (one where `condition` holds)?
async fn has_rows(run: &StatementRun, table: &str, condition: Option<&str>) -> PgResult<bool> {
    let sql = format!(
        "SELECT 1 FROM public.{}{} LIMIT 1",
        quote(table),
        condition.map(|c| format!(" WHERE {c}")).unwrap_or_default()
    );
    let stmt = datafusion::sql::sqlparser::parser::Parser::parse_sql(&PostgreSqlDialect {}, &sql)
        .map_err(|e| crate::errors::from_parser(&e, Some(&sql)))?
        .remove(0);
    let plan = crate::sql::plan_statement(&run.state, &stmt, &[]).await?;
    let physical = run.physical_plan(&plan).await?;
    let batches = datafusion::physical_plan::collect(physical, run.state.task_ctx())
        .await
        .map_err(crate::errors::from_datafusion)?;
    Ok(batches.iter().any(|b| b.num_rows() > 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_view_queries_read_a_column() {
        assert!(query_mentions("SELECT a, b FROM t", "a"));
        assert!(query_mentions("SELECT \"A\" FROM t", "A"));
        assert!(!query_mentions("SELECT \"A\" FROM t", "a"));
        assert!(query_mentions("SELECT A FROM t", "a"));
        assert!(query_mentions("SELECT * FROM t", "zz"));
        assert!(query_mentions("SELECT t.* FROM t", "zz"));
        assert!(!query_mentions("SELECT count(*) FROM t", "zz"));
        assert!(!query_mentions("SELECT b FROM t WHERE c > 1", "a"));
    }
}
