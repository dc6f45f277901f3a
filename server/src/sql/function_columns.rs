//! Column names of set-returning functions in `FROM`, as PostgreSQL gives them.
//!
//! A function in `FROM` that returns a set of a scalar type makes a one-column relation.
//! PostgreSQL names that column after the relation's alias when there is one and after the
//! function otherwise:
//!
//! ```text
//!   FROM generate_series(1, 3)           column "generate_series"
//!   FROM generate_series(1, 3) i         column "i"      (so `SELECT i … FROM generate_series(1, 3) i`)
//!   FROM generate_series(1, 3) AS t(n)   column "n"      (an explicit column list wins)
//!   FROM unnest(ARRAY[1, 2]) u           column "u"
//! ```
//!
//! DataFusion names the column `value` (or an `UNNEST(…)` expression) instead, so a
//! statement as common as `INSERT … SELECT i, md5(i::text) FROM generate_series(1, n) i`
//! fails with "column i does not exist". [`name_function_columns`] gives such a `FROM` item
//! the alias and column list PostgreSQL implies, on the parsed statement, before DataFusion
//! plans it. Only functions known to return one scalar column are touched: `generate_series`
//! and a one-array `unnest`.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    self, Ident, ObjectNamePart, TableAlias, TableAliasColumnDef, TableFactor, VisitMut, VisitorMut,
};

use crate::sql::ddl::ident_name;

/// Set-returning functions of one scalar column, by their lower-case name.
const SCALAR_SET_FUNCTIONS: &[&str] = &["generate_series"];

/// Give every scalar set-returning function in the statement's `FROM` lists its
/// PostgreSQL column name (see the module comment).
pub fn name_function_columns(stmt: &mut ast::Statement) {
    struct Name;
    impl VisitorMut for Name {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
            match factor {
                TableFactor::Table {
                    name,
                    args: Some(_),
                    alias,
                    ..
                } => {
                    if let Some(ObjectNamePart::Identifier(function)) = name.0.last() {
                        let function = ident_name(function);
                        if SCALAR_SET_FUNCTIONS.contains(&function.as_str()) {
                            name_column(alias, &function);
                        }
                    }
                }
                TableFactor::UNNEST {
                    alias,
                    array_exprs,
                    with_offset: false,
                    with_ordinality: false,
                    ..
                } if array_exprs.len() == 1 => name_column(alias, "unnest"),
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    let _ = stmt.visit(&mut Name);
}

/// Without an alias: alias and column both named `function`. With an alias but no column
/// list: the column named as the alias. An explicit column list stays.
fn name_column(alias: &mut Option<TableAlias>, function: &str) {
    let alias = alias.get_or_insert_with(|| TableAlias {
        explicit: false,
        name: Ident::new(function),
        columns: Vec::new(),
        at: None,
    });
    if alias.columns.is_empty() {
        alias.columns.push(TableAliasColumnDef {
            name: alias.name.clone(),
            data_type: None,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn named(sql: &str) -> String {
        let mut stmt = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0);
        name_function_columns(&mut stmt);
        stmt.to_string()
    }

    #[test]
    fn the_alias_or_the_function_names_the_column() {
        assert_eq!(
            named("SELECT i FROM generate_series(1, 3) i"),
            "SELECT i FROM generate_series(1, 3) i (i)"
        );
        assert_eq!(
            named("SELECT * FROM generate_series(1, 3)"),
            "SELECT * FROM generate_series(1, 3) generate_series (generate_series)"
        );
        assert_eq!(
            named("SELECT * FROM unnest(ARRAY[1, 2]) AS u"),
            "SELECT * FROM UNNEST(ARRAY[1, 2]) AS u (u)"
        );
        assert_eq!(
            named("INSERT INTO t SELECT g, md5(g::TEXT) FROM GENERATE_SERIES(1, 9) g"),
            "INSERT INTO t SELECT g, md5(g::TEXT) FROM GENERATE_SERIES(1, 9) g (g)"
        );
    }

    #[test]
    fn explicit_columns_tables_and_other_functions_stay() {
        for sql in [
            "SELECT n FROM generate_series(1, 3) AS t (n)",
            "SELECT * FROM t AS i",
            "SELECT * FROM pg_get_keywords() AS k",
            "SELECT * FROM UNNEST(ARRAY[1], ARRAY[2]) AS u",
            "SELECT * FROM \"Generate_Series\"(1, 2) AS g",
        ] {
            assert_eq!(named(sql), sql);
        }
    }
}
