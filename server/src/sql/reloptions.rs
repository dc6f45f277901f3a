//! Storage parameters of `CREATE INDEX … WITH (name = value, …)`, of `ALTER INDEX … SET
//! (…)`, of `CREATE TABLE … WITH (…)` and of `ALTER TABLE … SET (…)`.
//!
//! A B-tree index takes PostgreSQL 18's two: `deduplicate_items` (boolean, default on:
//! equal keys are merged into posting lists) and `fillfactor` (10 to 100, default 90: how
//! full CREATE INDEX packs the leaves, and where the rightmost leaf splits). Each is checked
//! as PostgreSQL checks it, with its messages (SQLSTATE 22023), and kept as the text
//! `pg_class.reloptions` shows: `name=value`, the value as written — identifiers and
//! keywords folded to lower case, strings as they are, a bare name meaning `true`.
//!
//! A table takes `fillfactor` (10 to 100, PostgreSQL's heap bounds) and
//! `autovacuum_enabled` (boolean). iolab records them (they show in `pg_class.reloptions`
//! and `\d+`), but its heap fills pages whole whatever the fill factor says, and it has
//! no autovacuum to turn off (scripts written for PostgreSQL's experiments set it).
//! PostgreSQL's other table parameters are refused with 0A000, unknown names with
//! PostgreSQL's 22023.
//!
//! `SET (…)` on a relation with parameters replaces the values of the names it gives and
//! adds the others after those kept, as PostgreSQL orders them; `RESET (…)` removes names
//! (an unknown one is ignored, as in PostgreSQL).

use datafusion::sql::sqlparser::ast;
use iolab_catalog::{sqlstate, PgError, PgResult};
use iolab_engine::values::input::parse_bool;

use super::ddl::ident_name;

/// The B-tree leaf fill factor's bounds (PostgreSQL's `BTREE_MIN_FILLFACTOR`, 100), which
/// are also the heap's (`HEAP_MIN_FILLFACTOR`).
const FILLFACTOR_RANGE: std::ops::RangeInclusive<i64> = 10..=100;

/// PostgreSQL's table storage parameters iolab does not take.
const OTHER_HEAP_PARAMETERS: &[&str] = &[
    "autovacuum_vacuum_threshold",
    "autovacuum_vacuum_max_threshold",
    "autovacuum_vacuum_scale_factor",
    "autovacuum_vacuum_insert_threshold",
    "autovacuum_vacuum_insert_scale_factor",
    "autovacuum_analyze_threshold",
    "autovacuum_analyze_scale_factor",
    "autovacuum_vacuum_cost_delay",
    "autovacuum_vacuum_cost_limit",
    "autovacuum_freeze_min_age",
    "autovacuum_freeze_max_age",
    "autovacuum_freeze_table_age",
    "autovacuum_multixact_freeze_min_age",
    "autovacuum_multixact_freeze_max_age",
    "autovacuum_multixact_freeze_table_age",
    "log_autovacuum_min_duration",
    "parallel_workers",
    "toast_tuple_target",
    "user_catalog_table",
    "vacuum_index_cleanup",
    "vacuum_truncate",
    "vacuum_max_eager_freeze_failure_rate",
];

/// The `WITH (…)` list of a B-tree CREATE INDEX as `reloptions` entries.
pub fn btree_reloptions(with: &[ast::Expr]) -> PgResult<Vec<String>> {
    checked_reloptions(with, |name| match name {
        "deduplicate_items" | "fillfactor" => Ok(()),
        _ => Err(unrecognized(name)),
    })
}

/// The `WITH (…)` options of CREATE TABLE as `reloptions` entries (checked before the
/// table is made).
pub fn create_table_reloptions(options: &ast::CreateTableOptions) -> PgResult<Vec<String>> {
    let list = match options {
        ast::CreateTableOptions::None => return Ok(Vec::new()),
        ast::CreateTableOptions::With(list) => list,
        other => {
            return Err(PgError::syntax(format!(
                "syntax error at or near \"{other}\""
            )))
        }
    };
    let exprs = list
        .iter()
        .map(|option| match option {
            ast::SqlOption::Ident(name) => Ok(ast::Expr::Identifier(name.clone())),
            ast::SqlOption::KeyValue { key, value } => Ok(ast::Expr::BinaryOp {
                left: Box::new(ast::Expr::Identifier(key.clone())),
                op: ast::BinaryOperator::Eq,
                right: Box::new(value.clone()),
            }),
            other => Err(PgError::syntax(format!(
                "syntax error at or near \"{other}\""
            ))),
        })
        .collect::<PgResult<Vec<_>>>()?;
    heap_reloptions(&exprs)
}

/// The `SET (…)` list of ALTER TABLE on a table as `reloptions` entries.
pub fn heap_reloptions(with: &[ast::Expr]) -> PgResult<Vec<String>> {
    checked_reloptions(with, |name| match name {
        "fillfactor" | "autovacuum_enabled" => Ok(()),
        other if OTHER_HEAP_PARAMETERS.contains(&other) => Err(PgError::unsupported(format!(
            "storage parameter \"{other}\" is not supported by iolab"
        ))),
        _ => Err(unrecognized(name)),
    })
}

fn unrecognized(name: &str) -> PgError {
    PgError::new(
        sqlstate::INVALID_PARAMETER_VALUE,
        format!("unrecognized parameter \"{name}\""),
    )
}

/// `current` after `SET (set)`: the names `set` gives lose their old values, which come
/// after the others.
pub fn set_reloptions(current: &[String], set: Vec<String>) -> Vec<String> {
    let name = |o: &String| o.split('=').next().unwrap_or_default().to_string();
    let names: Vec<String> = set.iter().map(name).collect();
    let mut out: Vec<String> = current
        .iter()
        .filter(|o| !names.contains(&name(o)))
        .cloned()
        .collect();
    out.extend(set);
    out
}

/// `current` after `RESET (names)`.
pub fn reset_reloptions(current: &[String], names: &[String]) -> Vec<String> {
    current
        .iter()
        .filter(|o| !names.iter().any(|n| o.split('=').next() == Some(n)))
        .cloned()
        .collect()
}

/// Checks each `name = value` of `with` (names by `known`, values by their name's type)
/// and lists them as `reloptions` entries.
fn checked_reloptions(
    with: &[ast::Expr],
    known: impl Fn(&str) -> PgResult<()>,
) -> PgResult<Vec<String>> {
    let mut options: Vec<String> = Vec::with_capacity(with.len());
    for expr in with {
        let (name, value) = name_and_value(expr)?;
        let invalid = |message: String| PgError::new(sqlstate::INVALID_PARAMETER_VALUE, message);
        known(&name)?;
        match name.as_str() {
            "deduplicate_items" | "autovacuum_enabled" => {
                if parse_bool(&value).is_err() {
                    return Err(invalid(format!(
                        "invalid value for boolean option \"{name}\": {value}"
                    )));
                }
            }
            "fillfactor" => {
                let n: i64 = value.trim().parse().map_err(|_| {
                    invalid(format!(
                        "invalid value for integer option \"{name}\": {value}"
                    ))
                })?;
                if !FILLFACTOR_RANGE.contains(&n) {
                    return Err(invalid(format!(
                        "value {value} out of bounds for option \"{name}\""
                    ))
                    .with_detail(format!(
                        "Valid values are between \"{}\" and \"{}\".",
                        FILLFACTOR_RANGE.start(),
                        FILLFACTOR_RANGE.end()
                    )));
                }
            }
            _ => {}
        }
        if options.iter().any(|o| o.split('=').next() == Some(&name)) {
            return Err(invalid(format!(
                "parameter \"{name}\" specified more than once"
            )));
        }
        options.push(format!("{name}={value}"));
    }
    Ok(options)
}

/// `name = value`, or a bare `name` (= true), as text.
pub(crate) fn name_and_value(expr: &ast::Expr) -> PgResult<(String, String)> {
    let syntax = || PgError::syntax(format!("syntax error at or near \"{expr}\""));
    match expr {
        ast::Expr::Identifier(name) => Ok((ident_name(name), "true".into())),
        ast::Expr::BinaryOp {
            left,
            op: ast::BinaryOperator::Eq,
            right,
        } => {
            let ast::Expr::Identifier(name) = left.as_ref() else {
                return Err(syntax());
            };
            let value = match right.as_ref() {
                ast::Expr::Identifier(id) => ident_name(id),
                ast::Expr::Value(v) => match &v.value {
                    ast::Value::Boolean(b) => b.to_string(),
                    ast::Value::Number(n, _) => n.to_string(),
                    ast::Value::SingleQuotedString(s) => s.clone(),
                    _ => return Err(syntax()),
                },
                ast::Expr::UnaryOp {
                    op: ast::UnaryOperator::Minus,
                    expr,
                } => match expr.as_ref() {
                    ast::Expr::Value(v) => match &v.value {
                        ast::Value::Number(n, _) => format!("-{n}"),
                        _ => return Err(syntax()),
                    },
                    _ => return Err(syntax()),
                },
                _ => return Err(syntax()),
            };
            Ok((ident_name(name), value))
        }
        _ => Err(syntax()),
    }
}

/// `reloptions` as `pg_get_indexdef` prints them after `WITH`: `name=value, …`, the value
/// quoted as a literal unless it reads as a plain identifier.
pub fn with_clause(reloptions: &[String]) -> String {
    reloptions
        .iter()
        .map(|o| {
            let (name, value) = o.split_once('=').unwrap_or((o, ""));
            if iolab_settings::quote_identifier(value) == value {
                format!("{name}={value}")
            } else {
                format!("{name}='{}'", value.replace('\'', "''"))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    /// The options of `WITH (list)` as sqlparser reads them.
    fn options(list: &str) -> Vec<ast::Expr> {
        let sql = format!("CREATE INDEX i ON t (a) WITH ({list})");
        let stmt = Parser::parse_sql(&PostgreSqlDialect {}, &sql)
            .unwrap()
            .remove(0);
        let ast::Statement::CreateIndex(create) = stmt else {
            panic!("{stmt:?}")
        };
        create.with
    }

    fn with(list: &str) -> PgResult<Vec<String>> {
        btree_reloptions(&options(list))
    }

    #[test]
    fn values_are_kept_as_written_and_checked() {
        assert_eq!(
            with("deduplicate_items = OFF").unwrap(),
            ["deduplicate_items=off"]
        );
        assert_eq!(
            with("deduplicate_items").unwrap(),
            ["deduplicate_items=true"]
        );
        assert_eq!(
            with("deduplicate_items = 'Off', fillfactor = 70").unwrap(),
            ["deduplicate_items=Off", "fillfactor=70"]
        );
        assert_eq!(
            with("deduplicate_items = false").unwrap(),
            ["deduplicate_items=false"]
        );
        let message = |list: &str| with(list).unwrap_err().message;
        assert_eq!(
            message("deduplicate_items = maybe"),
            "invalid value for boolean option \"deduplicate_items\": maybe"
        );
        assert_eq!(message("foo = 1"), "unrecognized parameter \"foo\"");
        assert_eq!(
            message("deduplicate_items = off, deduplicate_items = on"),
            "parameter \"deduplicate_items\" specified more than once"
        );
        let e = with("fillfactor = 5").unwrap_err();
        assert_eq!(e.code, sqlstate::INVALID_PARAMETER_VALUE);
        assert_eq!(e.message, "value 5 out of bounds for option \"fillfactor\"");
        assert_eq!(
            message("fillfactor = x"),
            "invalid value for integer option \"fillfactor\": x"
        );
    }

    #[test]
    fn tables_take_fillfactor_and_set_replaces_values() {
        let set = |list: &str| heap_reloptions(&options(list));
        assert_eq!(set("fillfactor = 70").unwrap(), ["fillfactor=70"]);
        let e = set("deduplicate_items = off").unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                sqlstate::INVALID_PARAMETER_VALUE,
                "unrecognized parameter \"deduplicate_items\""
            )
        );
        assert_eq!(
            set("autovacuum_enabled = off, fillfactor = 50").unwrap(),
            ["autovacuum_enabled=off", "fillfactor=50"]
        );
        assert_eq!(
            set("autovacuum_enabled = maybe").unwrap_err().message,
            "invalid value for boolean option \"autovacuum_enabled\": maybe"
        );
        assert_eq!(
            set("autovacuum_vacuum_scale_factor = 0.1")
                .unwrap_err()
                .code,
            sqlstate::FEATURE_NOT_SUPPORTED
        );
        assert_eq!(
            set("fillfactor = 101").unwrap_err().code,
            sqlstate::INVALID_PARAMETER_VALUE
        );
        let current: Vec<String> = vec!["fillfactor=70".into(), "deduplicate_items=off".into()];
        assert_eq!(
            set_reloptions(&current, vec!["fillfactor=80".into()]),
            ["deduplicate_items=off", "fillfactor=80"]
        );
        assert_eq!(
            reset_reloptions(&current, &["deduplicate_items".into(), "foo".into()]),
            ["fillfactor=70"]
        );
    }

    #[test]
    fn the_with_clause_quotes_what_is_not_an_identifier() {
        let options = [
            "deduplicate_items=off",
            "deduplicate_items=false",
            "fillfactor=70",
        ];
        let options: Vec<String> = options.iter().map(|s| s.to_string()).collect();
        assert_eq!(
            with_clause(&options),
            "deduplicate_items=off, deduplicate_items='false', fillfactor='70'"
        );
    }
}
