//! CREATE TABLE, DROP TABLE, TRUNCATE: catalog changes and the files behind them.

use datafusion::sql::sqlparser::ast::{self, ColumnOption, ObjectName, ObjectType, Statement};
use iolab_catalog::store::MAX_IDENTIFIER_LEN;
use iolab_catalog::{sqlstate, ColumnDef, Persistence, PgError, PgResult, PgType};
use iolab_engine::Database;

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

pub fn create_table(db: &Database, create: &ast::CreateTable, unlogged: bool) -> PgResult<()> {
    if create.query.is_some() {
        return Err(PgError::unsupported("CREATE TABLE AS is not supported yet"));
    }
    if create.temporary {
        return Err(PgError::unsupported("temporary tables are not supported"));
    }
    if !create.constraints.is_empty() {
        return Err(PgError::unsupported(
            "table constraints (PRIMARY KEY, UNIQUE, FOREIGN KEY, CHECK) are not supported yet",
        ));
    }
    let (schema, name) = split_name(&create.name)?;
    check_identifier(&name)?;
    let mut columns = Vec::with_capacity(create.columns.len());
    for col in &create.columns {
        let col_name = ident_name(&col.name);
        check_identifier(&col_name)?;
        let ty = column_type(&col.data_type)?;
        let mut not_null = false;
        for opt in &col.options {
            match &opt.option {
                ColumnOption::NotNull => not_null = true,
                ColumnOption::Null => not_null = false,
                other => {
                    return Err(PgError::unsupported(format!(
                        "column option \"{other}\" is not supported yet (column \"{col_name}\")"
                    )))
                }
            }
        }
        columns.push(ColumnDef {
            name: col_name,
            ty,
            not_null,
        });
    }
    let persistence = if unlogged {
        Persistence::Unlogged
    } else {
        Persistence::Permanent
    };
    let schema = schema.unwrap_or_else(|| "public".to_string());
    if let Some(table) =
        db.catalog
            .create_table(&schema, &name, persistence, columns, create.if_not_exists)?
    {
        db.create_relation_file(&table)?;
    }
    Ok(())
}

fn check_identifier(name: &str) -> PgResult<()> {
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

/// DROP TABLE [IF EXISTS] a, b; returns whether anything was dropped, and notices.
pub fn drop(db: &Database, stmt: &Statement) -> PgResult<Vec<String>> {
    let Statement::Drop {
        object_type,
        if_exists,
        names,
        ..
    } = stmt
    else {
        return Err(PgError::internal("not a DROP statement"));
    };
    if *object_type != ObjectType::Table {
        return Err(PgError::unsupported(format!(
            "DROP {object_type} is not supported"
        )));
    }
    let mut notices = Vec::new();
    let mut tables = Vec::new();
    for name in names {
        let (schema, table) = split_name(name)?;
        match db.catalog.resolve(schema.as_deref(), &table) {
            Ok(def) => tables.push(def),
            Err(_) if *if_exists => {
                notices.push(format!("table \"{table}\" does not exist, skipping"))
            }
            Err(e) => {
                return Err(PgError::new(
                    e.code,
                    format!("table \"{table}\" does not exist"),
                ))
            }
        }
    }
    for def in tables {
        db.catalog.drop_table(def.oid)?;
        db.remove_relation_file(def.relfilenode)?;
    }
    Ok(notices)
}

pub fn truncate(db: &Database, names: &[ObjectName]) -> PgResult<()> {
    let mut tables = Vec::new();
    for name in names {
        let (schema, table) = split_name(name)?;
        tables.push(db.catalog.resolve(schema.as_deref(), &table)?);
    }
    for def in tables {
        let (old, new) = db.catalog.new_relfilenode(def.oid)?;
        db.relfile(new)?;
        db.remove_relation_file(old)?;
    }
    Ok(())
}
