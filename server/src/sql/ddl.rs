//! CREATE TABLE (also `… AS query`; columns with defaults, `serial`, identity), DROP TABLE,
//! TRUNCATE, CREATE INDEX, DROP INDEX:
//! catalog changes and the files behind them, each recorded in its transaction's
//! [`DdlLog`] so that ROLLBACK can undo it (`ddl_log.rs`); and CREATE EXTENSION, which
//! changes nothing.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::sql::sqlparser::ast::{self, ColumnOption, ObjectName, ObjectType, Statement};
use iolab_catalog::store::MAX_IDENTIFIER_LEN;
use iolab_catalog::{
    sqlstate, ColumnDef, ColumnDefault, ColumnSequence, DefaultValue, DroppedTable, Identity,
    IndexDef, Persistence, PgError, PgResult, PgType, TableDef,
};
use iolab_engine::accounting::IoAccount;
use iolab_engine::btree;
use iolab_engine::Database;

use crate::sql::constraints;
use crate::sql::ddl_log::{DdlEntry, DdlLog};
use crate::sql::StatementRun;

/// `schema.name` of an object name, lower-cased unless quoted.
pub fn split_name(name: &ObjectName) -> PgResult<(Option<String>, String)> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| match p.as_ident() {
            Some(id) => Ok(ident_name(id)),
            None => Err(PgError::syntax(format!("unexpected name part in {name}"))),
        })
        .collect::<PgResult<_>>()?;
    match parts.as_slice() {
        [n] => Ok((None, n.clone())),
        [s, n] => Ok((Some(s.clone()), n.clone())),
        [db, s, n] => {
            if db != "postgres" {
                return Err(PgError::unsupported(format!(
                    "cross-database references are not implemented: {name}"
                )));
            }
            Ok((Some(s.clone()), n.clone()))
        }
        _ => Err(PgError::syntax(format!(
            "improper qualified name (too many dotted names): {name}"
        ))),
    }
}

/// PostgreSQL folds unquoted identifiers to lower case.
pub fn ident_name(id: &ast::Ident) -> String {
    if id.quote_style.is_some() {
        id.value.clone()
    } else {
        id.value.to_lowercase()
    }
}

/// Maps a column type as written (`integer`, `varchar(20)`, `numeric(10,2)`) to a PgType.
pub fn column_type(dt: &ast::DataType) -> PgResult<PgType> {
    let text = dt.to_string().to_lowercase();
    let (name, mods) = match text.find('(') {
        Some(i) => {
            let inner = text[i + 1..].trim_end_matches(')');
            let mods: Result<Vec<u32>, _> =
                inner.split(',').map(|m| m.trim().parse::<u32>()).collect();
            let rest_after = text[i..]
                .find(')')
                .map(|j| text[i + j + 1..].trim().to_string())
                .unwrap_or_default();
            let base = if rest_after.is_empty() {
                text[..i].trim().to_string()
            } else {
                format!("{} {}", text[..i].trim(), rest_after)
            };
            (
                base,
                mods.map_err(|_| PgError::syntax(format!("invalid type modifier in \"{text}\"")))?,
            )
        }
        None => (text.trim().to_string(), vec![]),
    };
    // timestamp(3) and time zone variants: the precision is accepted and ignored
    // (values are kept to the microsecond).
    let (name, mods) = if name.starts_with("timestamp") {
        (name, vec![])
    } else {
        (name, mods)
    };
    if let ("varchar" | "character varying" | "char" | "character" | "bpchar", [0]) =
        (name.as_str(), mods.as_slice())
    {
        return Err(PgError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!("length for type {name} must be at least 1"),
        ));
    }
    if let ("numeric" | "decimal", [p, ..]) = (name.as_str(), mods.as_slice()) {
        if *p < 1 || *p > 38 {
            return Err(PgError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                format!("NUMERIC precision {p} must be between 1 and 38 in iolab (PostgreSQL allows 1000)"),
            ));
        }
    }
    PgType::from_sql_name(&name, &mods).ok_or_else(|| {
        PgError::new(
            sqlstate::UNDEFINED_OBJECT,
            format!("type \"{name}\" does not exist"),
        )
    })
}

/// CREATE [UNLOGGED] TABLE with a column list (for `… AS query` see [`create_table_as`]).
/// Columns may have defaults, be `serial` / `bigserial` / `smallserial` (an integer column,
/// NOT NULL, with `nextval` of a sequence it owns as default) or identity columns
/// (`GENERATED {ALWAYS | BY DEFAULT} AS IDENTITY [(options)]`, likewise with a sequence).
/// False when `IF NOT EXISTS` found the table.
/// `PARTITION BY`, `PARTITION OF` and `INHERITS` are refused (0A000): iolab has neither
/// partitioned tables nor inheritance, and a plain table in their place would hold rows
/// where the user expects partitions (`pgbench -i --partitions` then stops here).
fn refuse_partitions_and_inheritance(create: &ast::CreateTable) -> PgResult<()> {
    let refused = if create.partition_by.is_some() || create.partition_of.is_some() {
        "partitioned tables are not supported"
    } else if create.inherits.is_some() {
        "table inheritance (INHERITS) is not supported"
    } else {
        return Ok(());
    };
    Err(PgError::unsupported(refused))
}

pub fn create_table(
    run: &StatementRun,
    create: &ast::CreateTable,
    unlogged: bool,
    log: &mut DdlLog,
) -> PgResult<bool> {
    let db = &run.db;
    if create.query.is_some() {
        return Err(PgError::internal("CREATE TABLE AS goes to create_table_as"));
    }
    refuse_partitions_and_inheritance(create)?;
    let (_, table_name) = split_name(&create.name)?;
    let mut columns = Vec::with_capacity(create.columns.len());
    let mut defaults = Vec::new();
    let mut sequences = Vec::new();
    let mut keys = Vec::new();
    let mut explicitly_nullable = Vec::new();
    for col in &create.columns {
        let col_name = ident_name(&col.name);
        check_identifier(&col_name)?;
        let serial = serial_type(&col.data_type);
        let ty = match serial {
            Some(ty) => ty,
            None => column_type(&col.data_type)?,
        };
        let mut not_null = serial.is_some();
        let mut default: Option<DefaultValue> = None;
        let mut identity: Option<(Identity, iolab_catalog::SequenceOptions)> = None;
        let multiple_defaults = || {
            PgError::syntax(format!(
                "multiple default values specified for column \"{col_name}\" of table \"{table_name}\""
            ))
        };
        for opt in &col.options {
            if let Some(key) = constraints::from_column_option(&col_name, opt) {
                keys.push(key?);
                continue;
            }
            match &opt.option {
                ColumnOption::NotNull => not_null = true,
                ColumnOption::Null => {
                    if serial.is_some() || identity.is_some() {
                        return Err(PgError::syntax(format!(
                            "conflicting NULL/NOT NULL declarations for column \"{col_name}\" of table \"{table_name}\""
                        )));
                    }
                    not_null = false;
                    explicitly_nullable.push(col_name.clone());
                }
                ColumnOption::Default(expr) => {
                    if serial.is_some() || default.is_some() || identity.is_some() {
                        return Err(multiple_defaults());
                    }
                    default = Some(crate::sql::defaults::parse_default(db, expr)?);
                }
                ColumnOption::Generated {
                    generated_as,
                    sequence_options,
                    generation_expr: None,
                    ..
                } if *generated_as != ast::GeneratedAs::ExpStored => {
                    if serial.is_some() || default.is_some() {
                        return Err(multiple_defaults());
                    }
                    if identity.is_some() {
                        return Err(PgError::syntax(format!(
                            "multiple identity specifications for column \"{col_name}\" of table \"{table_name}\""
                        )));
                    }
                    if !matches!(ty, PgType::Int2 | PgType::Int4 | PgType::Int8) {
                        return Err(PgError::new(
                            sqlstate::INVALID_PARAMETER_VALUE,
                            "identity column type must be smallint, integer, or bigint",
                        ));
                    }
                    let kind = match generated_as {
                        ast::GeneratedAs::Always => Identity::Always,
                        _ => Identity::ByDefault,
                    };
                    let options = crate::sql::sequence::identity_options(
                        sequence_options.as_deref().unwrap_or(&[]),
                    )?;
                    identity = Some((kind, options));
                    not_null = true;
                }
                other => {
                    return Err(PgError::unsupported(format!(
                        "column option \"{other}\" is not supported yet (column \"{col_name}\")"
                    )))
                }
            }
        }
        if serial.is_some() {
            sequences.push(ColumnSequence {
                column: col_name.clone(),
                def: crate::sql::sequence::column_sequence(ty, &Default::default())?,
                identity: None,
            });
        } else if let Some((kind, options)) = identity {
            sequences.push(ColumnSequence {
                column: col_name.clone(),
                def: crate::sql::sequence::column_sequence(ty, &options)?,
                identity: Some(kind),
            });
        } else if let Some(value) = default {
            defaults.push(ColumnDefault {
                column: col_name.clone(),
                value,
                identity: None,
            });
        }
        columns.push(ColumnDef {
            name: col_name,
            ty,
            not_null,
        });
    }
    for c in &create.constraints {
        match constraints::from_table_constraint(c) {
            Some(key) => keys.push(key?),
            None => {
                return Err(PgError::unsupported(
                    "FOREIGN KEY and CHECK constraints are not supported yet",
                ))
            }
        }
    }
    let keys = constraints::plan(&table_name, &mut columns, &explicitly_nullable, keys)?;
    let made = make_table(run, create, unlogged, columns, defaults, sequences, log)?;
    if let Some(table) = &made {
        constraints::create(run, table, &keys)?;
    }
    Ok(made.is_some())
}

/// The integer type of a `serial` column type (`serial`, `bigserial`, `smallserial` and
/// their `serial4` / `serial8` / `serial2` spellings).
fn serial_type(dt: &ast::DataType) -> Option<PgType> {
    match dt.to_string().to_lowercase().as_str() {
        "serial" | "serial4" => Some(PgType::Int4),
        "bigserial" | "serial8" => Some(PgType::Int8),
        "smallserial" | "serial2" => Some(PgType::Int2),
        _ => None,
    }
}

/// CREATE [UNLOGGED] TABLE name AS query: a table with the query's columns — named as
/// PostgreSQL names the query's result columns, typed as the result is reported to
/// clients — filled with its rows. Returns the rows loaded, or `None` when `IF NOT EXISTS`
/// found the table. If loading fails, the transaction's rollback removes the table.
pub async fn create_table_as(
    run: &StatementRun,
    create: &ast::CreateTable,
    unlogged: bool,
    log: &mut DdlLog,
) -> PgResult<Option<u64>> {
    let query = create
        .query
        .clone()
        .ok_or_else(|| PgError::internal("CREATE TABLE AS without a query"))?;
    refuse_partitions_and_inheritance(create)?;
    if create
        .columns
        .iter()
        .any(|c| c.data_type != ast::DataType::Unspecified)
    {
        // Column types belong in the query; PostgreSQL's grammar refuses them here.
        return Err(PgError::syntax("syntax error at or near \"AS\""));
    }
    let query = ast::Statement::Query(query);
    let stream = run.query_stream_in_order(&query).await?;
    let schema = crate::sql::colnames::rename(&query, stream.schema());
    // `CREATE TABLE t (a, b) AS …` names the first columns (sql::ctas_columns).
    if create.columns.len() > schema.fields().len() {
        return Err(PgError::syntax("too many column names were specified"));
    }
    let mut columns = Vec::with_capacity(schema.fields().len());
    for (i, field) in schema.fields().iter().enumerate() {
        let name = match create.columns.get(i) {
            Some(listed) => ident_name(&listed.name),
            None => field.name().clone(),
        };
        check_identifier(&name)?;
        // An untyped NULL is text, as PostgreSQL resolves an unknown-type column.
        let ty = match field.data_type() {
            DataType::Null => Some(PgType::Text),
            other => PgType::for_arrow(other),
        }
        .ok_or_else(|| {
            PgError::unsupported(format!(
                "column \"{name}\" has a type iolab tables cannot store ({})",
                field.data_type()
            ))
        })?;
        columns.push(ColumnDef {
            name,
            ty,
            not_null: false,
        });
    }
    let Some(table) = make_table(run, create, unlogged, columns, vec![], vec![], log)? else {
        return Ok(None);
    };
    let targets: Vec<usize> = (0..table.columns.len()).collect();
    crate::sql::insert::insert_stream(run, &table, &targets, stream)
        .await
        .map(Some)
}

/// Checks what CREATE TABLE cannot do, then creates the table and its file. `None`: it
/// exists and `IF NOT EXISTS` was given.
fn make_table(
    run: &StatementRun,
    create: &ast::CreateTable,
    unlogged: bool,
    columns: Vec<ColumnDef>,
    defaults: Vec<ColumnDefault>,
    sequences: Vec<ColumnSequence>,
    log: &mut DdlLog,
) -> PgResult<Option<TableDef>> {
    if create.query.is_some() && !create.constraints.is_empty() {
        return Err(PgError::syntax("syntax error at or near \"AS\""));
    }
    let (schema, name) = split_name(&create.name)?;
    check_identifier(&name)?;
    let reloptions = super::reloptions::create_table_reloptions(&create.table_options)?;
    let db = &run.db;
    let temporary = creates_temporary(create)?;
    let on_commit = match create.on_commit {
        None | Some(ast::OnCommit::PreserveRows) => None,
        Some(ast::OnCommit::DeleteRows) => Some(iolab_engine::temp::OnCommit::DeleteRows),
        Some(ast::OnCommit::Drop) => Some(iolab_engine::temp::OnCommit::Drop),
    };
    if create.on_commit.is_some() && !temporary {
        return Err(PgError::new(
            sqlstate::INVALID_TABLE_DEFINITION,
            "ON COMMIT can only be used on temporary tables",
        ));
    }
    let persistence = match (temporary, unlogged) {
        (true, _) => Persistence::Temporary,
        (false, true) => Persistence::Unlogged,
        (false, false) => Persistence::Permanent,
    };
    let schema = match persistence {
        Persistence::Temporary => run
            .temp
            .schema()
            .ok_or_else(|| PgError::internal("no temporary schema"))?
            .to_string(),
        _ => schema.unwrap_or_else(|| "public".into()),
    };
    let table = db
        .catalog
        .create_table_with_defaults(
            &schema,
            &name,
            persistence,
            columns,
            defaults,
            sequences,
            create.if_not_exists,
        )?
        .map(|(table, _)| table);
    let Some(mut table) = table else {
        return Ok(None);
    };
    log.record(db, DdlEntry::CreatedTable { oid: table.oid })?;
    db.create_relation_file(&table)?;
    if let Some(action) = on_commit {
        run.temp.on_commit(table.oid, action);
    }
    if !reloptions.is_empty() {
        let mut state = (db.catalog.table_state(table.oid))
            .ok_or_else(|| PgError::internal("the table just made is gone"))?;
        state.table.reloptions = reloptions;
        table.reloptions = state.table.reloptions.clone();
        db.catalog.put_table_state(state)?;
    }
    Ok(Some(table))
}

/// Whether CREATE TABLE makes a temporary table: `TEMP`/`TEMPORARY`, or a name in schema
/// `pg_temp`. A temporary table named in another schema is PostgreSQL's error 42P16.
pub fn creates_temporary(create: &ast::CreateTable) -> PgResult<bool> {
    let (schema, _) = split_name(&create.name)?;
    let in_temp = schema
        .as_deref()
        .is_some_and(|s| s == "pg_temp" || iolab_engine::temp::is_temp_schema(s));
    if create.temporary && schema.is_some() && !in_temp {
        return Err(PgError::new(
            sqlstate::INVALID_TABLE_DEFINITION,
            "cannot create temporary relation in non-temporary schema",
        ));
    }
    Ok(create.temporary || in_temp)
}

/// PostgreSQL's notice when CREATE TABLE IF NOT EXISTS finds the table.
pub fn table_exists_notice(create: &ast::CreateTable) -> String {
    let name = split_name(&create.name).map(|(_, n)| n).unwrap_or_default();
    format!("relation \"{name}\" already exists, skipping")
}

pub(crate) fn check_identifier(name: &str) -> PgResult<()> {
    if name.len() > MAX_IDENTIFIER_LEN {
        return Err(PgError::new(
            sqlstate::NAME_TOO_LONG,
            format!("identifier \"{name}\" is too long (at most {MAX_IDENTIFIER_LEN} bytes)"),
        ));
    }
    if name.is_empty() {
        return Err(PgError::syntax("zero-length delimited identifier"));
    }
    Ok(())
}

/// DROP TABLE [IF EXISTS] a, b (and their indexes), or DROP INDEX [IF EXISTS] a, b;
/// returns the notices. The catalog entries go now, the files at COMMIT.
pub fn drop(
    db: &Arc<Database>,
    temp: Option<&str>,
    stmt: &Statement,
    log: &mut DdlLog,
) -> PgResult<Vec<crate::session::Notice>> {
    use crate::session::Notice;
    let Statement::Drop {
        object_type,
        if_exists,
        names,
        cascade,
        ..
    } = stmt
    else {
        return Err(PgError::internal("not a DROP statement"));
    };
    let notices = |messages: Vec<String>| messages.into_iter().map(Notice::notice).collect();
    if *object_type == ObjectType::Index {
        return drop_indexes(db, temp, names, *if_exists, log).map(notices);
    }
    if *object_type == ObjectType::Sequence {
        return crate::sql::sequence::drop(db, names, *if_exists, log).map(notices);
    }
    if *object_type == ObjectType::View {
        return crate::sql::view::drop_views(db, names, *if_exists, *cascade, log);
    }
    if *object_type != ObjectType::Table {
        return Err(PgError::unsupported(format!(
            "DROP {object_type} is not supported"
        )));
    }
    let mut notices = Vec::new();
    let mut tables = Vec::new();
    for name in names {
        let (schema, table) = split_name(name)?;
        match db.catalog.resolve_in(temp, schema.as_deref(), &table) {
            Ok(def) => tables.push(def),
            Err(_)
                if db
                    .catalog
                    .index(schema.as_deref().unwrap_or("public"), &table)
                    .is_some() =>
            {
                return Err(PgError::new(
                    sqlstate::WRONG_OBJECT_TYPE,
                    format!("\"{table}\" is not a table"),
                )
                .with_hint("Use DROP INDEX to remove an index."))
            }
            Err(_)
                if db
                    .catalog
                    .sequence(schema.as_deref().unwrap_or("public"), &table)
                    .is_some() =>
            {
                return Err(PgError::new(
                    sqlstate::WRONG_OBJECT_TYPE,
                    format!("\"{table}\" is not a table"),
                )
                .with_hint("Use DROP SEQUENCE to remove a sequence."))
            }
            Err(_)
                if db
                    .catalog
                    .view(schema.as_deref().unwrap_or("public"), &table)
                    .is_some() =>
            {
                return Err(PgError::new(
                    sqlstate::WRONG_OBJECT_TYPE,
                    format!("\"{table}\" is not a table"),
                )
                .with_hint("Use DROP VIEW to remove a view."))
            }
            Err(_) if *if_exists => notices.push(Notice::notice(format!(
                "table \"{table}\" does not exist, skipping"
            ))),
            Err(e) => {
                return Err(PgError::new(
                    e.code,
                    format!("table \"{table}\" does not exist"),
                ))
            }
        }
    }
    notices.extend(drop_tables(db, tables, *cascade, log)?);
    Ok(notices)
}

/// Drops `tables` (and, with `cascade`, the views that read them; else those views are an
/// error), their indexes and owned sequences; returns the notices. The catalog entries go
/// now, the files at COMMIT.
pub fn drop_tables(
    db: &Arc<Database>,
    tables: Vec<TableDef>,
    cascade: bool,
    log: &mut DdlLog,
) -> PgResult<Vec<crate::session::Notice>> {
    let targets: Vec<crate::sql::view::Dropping> = tables
        .iter()
        .map(|t| crate::sql::view::Dropping {
            oid: t.oid,
            kind: "table",
            name: t.name.clone(),
        })
        .collect();
    let notices = crate::sql::view::drop_dependents(db, &targets, cascade, log)?;
    let notices: Vec<_> = notices.into_iter().collect();
    for def in tables {
        // The way back is written down before the table goes.
        let oid = def.oid;
        let dropped = DroppedTable {
            indexes: db.catalog.indexes_of(oid),
            statistics: db.catalog.table_statistics(oid),
            defaults: db.catalog.column_defaults(oid),
            sequences: db
                .catalog
                .sequences()
                .into_iter()
                .filter(|s| s.owned_by.as_ref().is_some_and(|o| o.table_oid == oid))
                .collect(),
            table: def,
        };
        log.record(db, DdlEntry::DroppedTable(dropped))?;
        db.catalog.drop_table(oid)?;
    }
    Ok(notices)
}

/// TRUNCATE a, b: each table and each of its indexes gets a new, empty file; the old ones
/// go at COMMIT.
pub fn truncate(
    db: &Arc<Database>,
    temp: Option<&str>,
    names: &[ObjectName],
    log: &mut DdlLog,
) -> PgResult<()> {
    let mut tables = Vec::new();
    for name in names {
        let (schema, table) = split_name(name)?;
        if crate::sql::view::is_view(db, schema.as_deref(), &table) {
            return Err(crate::sql::view::wrong_kind(format!(
                "\"{table}\" is not a table"
            )));
        }
        tables.push(db.catalog.resolve_in(temp, schema.as_deref(), &table)?);
    }
    for def in tables {
        // The way back is written down before the table changes files.
        let new_relfilenode = db.catalog.allocate_oid()?;
        let oid = def.oid;
        log.record(
            db,
            DdlEntry::Truncated {
                table: def,
                new_relfilenode,
                indexes: Vec::new(),
            },
        )?;
        db.catalog.set_relfilenode(oid, new_relfilenode, 0.0, 0)?;
        new_empty_files(db, oid, new_relfilenode, log)?;
    }
    Ok(())
}

/// The new, empty files of a truncated table (`relfilenode`, already in the catalog) and of
/// each of its indexes, which get new numbers here, each written to the TRUNCATE's entry in
/// `log` before the catalog changes.
fn new_empty_files(
    db: &Database,
    table_oid: u32,
    relfilenode: u32,
    log: &mut DdlLog,
) -> PgResult<()> {
    db.relfile(relfilenode)?;
    for index in db.catalog.indexes_of(table_oid) {
        let new = db.catalog.allocate_oid()?;
        let empty = IndexDef {
            relfilenode: new,
            ..index.clone()
        };
        log.record_truncated_index(index.clone(), new)?;
        db.catalog.set_index_relfilenode(index.oid, new)?;
        btree::truncate_index(db, &empty, &mut IoAccount::default())?;
    }
    Ok(())
}

/// `CREATE [UNIQUE] INDEX [CONCURRENTLY] [IF NOT EXISTS] [name] ON t [USING btree] (col)
/// [WITH (storage parameters)]`:
/// checks the statement as PostgreSQL 18 would, names the index (PostgreSQL's `t_a_idx`
/// rule when no name is given), builds it and records it. Returns the notices
/// (`relation "x" already exists, skipping` under IF NOT EXISTS).
pub async fn create_index(
    run: &StatementRun,
    create: &ast::CreateIndex,
    log: &mut DdlLog,
) -> PgResult<Vec<String>> {
    let db = &run.db;
    if create.if_not_exists && create.name.is_none() {
        // PostgreSQL's grammar wants a name after IF NOT EXISTS.
        return Err(PgError::syntax("syntax error at or near \"ON\""));
    }
    match &create.using {
        None | Some(ast::IndexType::BTree) => {}
        Some(ast::IndexType::Custom(am)) if ident_name(am) == "btree" => {}
        Some(ast::IndexType::Custom(am)) => {
            return Err(PgError::new(
                sqlstate::UNDEFINED_OBJECT,
                format!("access method \"{}\" does not exist", ident_name(am)),
            ))
        }
        Some(other) => {
            return Err(PgError::unsupported(format!(
                "access method \"{}\" is not supported by iolab (only btree)",
                other.to_string().to_lowercase()
            )))
        }
    }
    let unsupported = [
        (
            create.concurrently,
            "CREATE INDEX CONCURRENTLY is not supported",
        ),
        (
            !create.include.is_empty(),
            "INCLUDE columns are not supported",
        ),
        (
            create.predicate.is_some(),
            "partial indexes (WHERE) are not supported",
        ),
        (
            create.nulls_distinct.is_some(),
            "NULLS [NOT] DISTINCT is not supported",
        ),
    ];
    if let Some((_, message)) = unsupported.iter().find(|(yes, _)| *yes) {
        return Err(PgError::unsupported(*message));
    }
    let (schema, table_name) = split_name(&create.table_name)?;
    if crate::sql::view::is_view(db, schema.as_deref(), &table_name) {
        return Err(crate::sql::view::wrong_kind(format!(
            "cannot create index on relation \"{table_name}\""
        ))
        .with_detail("This operation is not supported for views."));
    }
    let table = run.resolve_table(schema.as_deref(), &table_name)?;
    if create.columns.is_empty() {
        return Err(PgError::syntax("syntax error at or near \")\""));
    }
    crate::sql::constraints::check_key_columns(create.columns.len())?;
    let mut columns = Vec::with_capacity(create.columns.len());
    let mut column_names: Vec<String> = Vec::with_capacity(create.columns.len());
    for column in &create.columns {
        let column_name = match &column.column.expr {
            ast::Expr::Identifier(id) => ident_name(id),
            _ => {
                return Err(PgError::unsupported(
                    "indexes on expressions are not supported yet",
                ))
            }
        };
        let options = &column.column.options;
        if options.asc == Some(false) {
            return Err(PgError::unsupported(
                "descending indexes are not supported yet",
            ));
        }
        if options.nulls_first == Some(true) {
            return Err(PgError::unsupported(
                "indexes with NULLS FIRST are not supported yet",
            ));
        }
        let col = table.column_index(&column_name).ok_or_else(|| {
            PgError::new(
                sqlstate::UNDEFINED_COLUMN,
                format!("column \"{column_name}\" does not exist"),
            )
        })?;
        let key_type = table.columns[col].ty;
        let (_, default_opclass) = iolab_catalog::index::btree_opclass(key_type);
        if let Some(opclass) = &column.operator_class {
            let (_, name) = split_name(opclass)?;
            if name != default_opclass {
                return Err(PgError::unsupported(format!(
                    "operator class \"{name}\" is not supported (iolab uses {default_opclass} for {})",
                    key_type.format_type()
                )));
            }
        }
        columns.push(col);
        column_names.push(index_column_name(&column_name, &column_names));
    }
    let name = match &create.name {
        Some(name) => {
            let (index_schema, name) = split_name(name)?;
            if index_schema.is_some() {
                // The index goes to the table's schema; PostgreSQL's grammar takes no schema.
                return Err(PgError::syntax("syntax error at or near \".\""));
            }
            check_identifier(&name)?;
            if db.catalog.relation_name_taken(&table.schema, &name) {
                if create.if_not_exists {
                    return Ok(vec![format!(
                        "relation \"{name}\" already exists, skipping"
                    )]);
                }
                return Err(PgError::new(
                    sqlstate::DUPLICATE_TABLE,
                    format!("relation \"{name}\" already exists"),
                ));
            }
            name
        }
        None => {
            let names: Vec<&str> = column_names.iter().map(String::as_str).collect();
            db.catalog
                .choose_index_name(&table.schema, &table.name, &names)
        }
    };
    let reloptions = super::reloptions::btree_reloptions(&create.with)?;
    let oid = db.catalog.allocate_oid()?;
    let def = IndexDef {
        unique: create.unique,
        reloptions,
        ..IndexDef::on_columns(oid, name, &table, &columns)
    };
    // The build runs on a blocking thread while this task stays awake, so that a cancel
    // request or statement_timeout ends the statement at once: the dropped statement
    // sets the cancel flag, and the build stops at its next check and removes its file.
    let (db, ctx) = (run.db.clone(), run.ctx.clone());
    let oid = def.oid;
    tokio::task::spawn_blocking(move || btree::create_index(&db, &ctx, &table, &def))
        .await
        .map_err(|e| PgError::internal(format!("CREATE INDEX did not finish: {e}")))??;
    log.record(&run.db, DdlEntry::CreatedIndex { oid })?;
    Ok(Vec::new())
}

/// The name of an index column in the index's name: the column's, with `1`, `2`, … added
/// when an earlier column of the index has it already (PostgreSQL's
/// `ChooseIndexColumnNames`: `(a, a)` gives `t_a_a1_idx`).
fn index_column_name(column: &str, earlier: &[String]) -> String {
    let mut name = column.to_string();
    let mut n = 0;
    while earlier.contains(&name) {
        n += 1;
        name = format!("{column}{n}");
    }
    name
}

/// DROP INDEX [IF EXISTS] a, b [CASCADE | RESTRICT]; returns the notices.
fn drop_indexes(
    db: &Arc<Database>,
    temp: Option<&str>,
    names: &[ObjectName],
    if_exists: bool,
    log: &mut DdlLog,
) -> PgResult<Vec<String>> {
    let mut notices = Vec::new();
    let mut indexes = Vec::new();
    for name in names {
        let (schema, index) = split_name(name)?;
        // The session's temporary schema comes first, as for tables.
        let in_schema = iolab_catalog::Catalog::schema_in(temp, schema.as_deref(), |s| {
            db.catalog.index(s, &index).is_some()
        });
        let in_schema = in_schema.as_str();
        if let Some(def) = db.catalog.index(in_schema, &index) {
            indexes.push(def);
        } else if db.catalog.table(in_schema, &index).is_some() {
            return Err(PgError::new(
                sqlstate::WRONG_OBJECT_TYPE,
                format!("\"{index}\" is not an index"),
            )
            .with_hint("Use DROP TABLE to remove a table."));
        } else if db.catalog.view(in_schema, &index).is_some() {
            return Err(PgError::new(
                sqlstate::WRONG_OBJECT_TYPE,
                format!("\"{index}\" is not an index"),
            )
            .with_hint("Use DROP VIEW to remove a view."));
        } else if if_exists {
            notices.push(format!("index \"{index}\" does not exist, skipping"));
        } else {
            return Err(PgError::new(
                sqlstate::UNDEFINED_OBJECT,
                format!("index \"{index}\" does not exist"),
            ));
        }
    }
    if let Some(def) = indexes.iter().find(|def| def.constraint.is_some()) {
        let table = db
            .catalog
            .table_by_oid(def.table_oid)
            .map_or_else(String::new, |t| t.name);
        return Err(constraints::index_required(def, &table));
    }
    for def in indexes {
        let oid = def.oid;
        log.record(db, DdlEntry::DroppedIndex(def))?;
        db.catalog.drop_index(oid)?;
    }
    Ok(notices)
}

/// `CREATE EXTENSION [IF NOT EXISTS] name [WITH] [SCHEMA s] [VERSION v] [CASCADE]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreateExtension {
    pub name: String,
    pub if_not_exists: bool,
    pub schema: Option<String>,
    pub version: Option<String>,
}

/// The extensions iolab has built in, with the versions `CREATE EXTENSION … VERSION`
/// accepts (PostgreSQL 18.4 installs these; the objects are always the newest's).
const BUILT_IN_EXTENSIONS: &[(&str, &[&str])] = &[
    ("pg_buffercache", &["1.2", "1.3", "1.4", "1.5", "1.6"]),
    ("pg_prewarm", &["1.2"]),
    ("pg_stat_statements", &["1.10", "1.11", "1.12"]),
];

/// Parses a CREATE EXTENSION statement with PostgreSQL's grammar (options in any order);
/// `None` if it is not one, so that the SQL parser reports the error.
pub fn parse_create_extension(text: &str) -> Option<CreateExtension> {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
    let tokens: Vec<Token> = Tokenizer::new(&PostgreSqlDialect {}, text)
        .tokenize()
        .ok()?
        .into_iter()
        .filter(|t| !matches!(t, Token::Whitespace(_)))
        .collect();
    let mut rest = tokens.as_slice();
    while let [before @ .., Token::SemiColon] = rest {
        rest = before;
    }
    let keyword = |t: &Token, k: &str| matches!(t, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(k));
    let name_of = |t: &Token| match t {
        // PostgreSQL folds unquoted names to lower case.
        Token::Word(w) if w.quote_style.is_some() => Some(w.value.clone()),
        Token::Word(w) => Some(w.value.to_lowercase()),
        _ => None,
    };
    let [create, extension, tail @ ..] = rest else {
        return None;
    };
    if !keyword(create, "create") || !keyword(extension, "extension") {
        return None;
    }
    rest = tail;
    let mut if_not_exists = false;
    if let [i, n, e, tail @ ..] = rest {
        if keyword(i, "if") && keyword(n, "not") && keyword(e, "exists") {
            if_not_exists = true;
            rest = tail;
        }
    }
    let (name, tail) = rest.split_first()?;
    let mut ext = CreateExtension {
        name: name_of(name)?,
        if_not_exists,
        schema: None,
        version: None,
    };
    rest = tail;
    if let [with, tail @ ..] = rest {
        if keyword(with, "with") {
            rest = tail;
        }
    }
    loop {
        match rest {
            [] => return Some(ext),
            [k, v, tail @ ..] if keyword(k, "schema") && ext.schema.is_none() => {
                ext.schema = Some(name_of(v)?);
                rest = tail;
            }
            [k, v, tail @ ..] if keyword(k, "version") && ext.version.is_none() => {
                ext.version = Some(match v {
                    Token::SingleQuotedString(s) => s.clone(),
                    Token::Word(w) => w.value.clone(),
                    _ => return None,
                });
                rest = tail;
            }
            [k, tail @ ..] if keyword(k, "cascade") => rest = tail,
            _ => return None,
        }
    }
}

/// CREATE EXTENSION: the extensions iolab has are built into `pg_catalog`, so creating
/// one does nothing; any other is PostgreSQL's "not available".
pub fn create_extension(ext: &CreateExtension) -> PgResult<()> {
    let Some((name, versions)) = BUILT_IN_EXTENSIONS.iter().find(|e| e.0 == ext.name) else {
        return Err(PgError::new(
            sqlstate::FEATURE_NOT_SUPPORTED,
            format!("extension \"{}\" is not available", ext.name),
        )
        .with_hint(
            "The extension must first be installed on the system where PostgreSQL is running.",
        ));
    };
    if let Some(schema) = &ext.schema {
        if !["public", "pg_catalog"].contains(&schema.as_str()) {
            return Err(PgError::new(
                sqlstate::INVALID_SCHEMA_NAME,
                format!("schema \"{schema}\" does not exist"),
            ));
        }
    }
    if let Some(version) = &ext.version {
        if !versions.contains(&version.as_str()) {
            return Err(PgError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                format!("extension \"{name}\" has no installation script nor update path for version \"{version}\""),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod extension_tests {
    use super::*;

    #[test]
    fn create_extension_parses_postgres_grammar() {
        let p = |s| parse_create_extension(s);
        assert_eq!(
            p("CREATE EXTENSION pg_buffercache;"),
            Some(CreateExtension {
                name: "pg_buffercache".into(),
                if_not_exists: false,
                schema: None,
                version: None
            })
        );
        let e =
            p("create extension if not exists PG_BufferCache cascade VERSION '1.5' schema public")
                .unwrap();
        assert!(e.if_not_exists);
        assert_eq!(e.name, "pg_buffercache");
        assert_eq!(
            (e.schema.as_deref(), e.version.as_deref()),
            (Some("public"), Some("1.5"))
        );
        assert_eq!(p("create extension \"Foo\" with").unwrap().name, "Foo");
        assert_eq!(
            p("create extension x cascade version '1' with schema s"),
            None
        );
        assert_eq!(p("create extension"), None);
        assert_eq!(p("create extension x y"), None);
    }

    #[test]
    fn only_built_in_extensions_are_created() {
        let ext = |name: &str, version: Option<&str>| CreateExtension {
            name: name.into(),
            if_not_exists: false,
            schema: None,
            version: version.map(str::to_string),
        };
        create_extension(&ext("pg_buffercache", None)).unwrap();
        create_extension(&ext("pg_buffercache", Some("1.6"))).unwrap();
        let e = create_extension(&ext("nosuch", None)).unwrap_err();
        assert_eq!(e.code, "0A000");
        assert_eq!(e.message, "extension \"nosuch\" is not available");
        assert_eq!(
            e.hint.as_deref(),
            Some(
                "The extension must first be installed on the system where PostgreSQL is running."
            )
        );
        assert_eq!(e.detail, None);
        let e = create_extension(&ext("pg_buffercache", Some("1.0"))).unwrap_err();
        assert_eq!(e.code, "22023");
        assert_eq!(
            e.message,
            "extension \"pg_buffercache\" has no installation script nor update path for version \"1.0\""
        );
    }
}
