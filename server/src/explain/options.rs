//! `EXPLAIN [ ( option [, …] ) ] statement` and `EXPLAIN [ANALYZE] [VERBOSE] statement`:
//! the options, their defaults and PostgreSQL 18's errors (`explain_state.c`,
//! `ParseExplainOptionList`).
//!
//! Options are read left to right and a later one wins (`(ANALYZE, ANALYZE false)` is off).
//! Then the defaults that depend on ANALYZE are filled in and the combinations checked, in
//! PostgreSQL's order:
//!
//! | check                                  | SQLSTATE | message |
//! |----------------------------------------|----------|---------|
//! | unknown option                         | 42601 | `unrecognized EXPLAIN option "x"` |
//! | boolean option with another value      | 42601 | `analyze requires a Boolean value` |
//! | FORMAT without a value                 | 42601 | `format requires a parameter` |
//! | FORMAT / SERIALIZE with a bad value    | 22023 | `unrecognized value for EXPLAIN option "format": "x"` |
//! | WAL without ANALYZE                    | 22023 | `EXPLAIN option WAL requires ANALYZE` |
//! | IO without ANALYZE                     | 22023 | `EXPLAIN option IO requires ANALYZE` |
//! | TIMING (explicitly on) without ANALYZE | 22023 | `EXPLAIN option TIMING requires ANALYZE` |
//! | SERIALIZE without ANALYZE              | 22023 | `EXPLAIN option SERIALIZE requires ANALYZE` |
//! | GENERIC_PLAN with ANALYZE              | 22023 | `EXPLAIN options ANALYZE and GENERIC_PLAN cannot be used together` |
//!
//! BUFFERS, TIMING and SUMMARY default to the value of ANALYZE (PostgreSQL 18 turned
//! BUFFERS on with ANALYZE).
//!
//! `IO` is PostgreSQL 19's option (not in 18): off by default, and like WAL it needs
//! ANALYZE. It adds the read-stream lines (`Prefetch:`, `I/O:`) to the scans.

use datafusion::sql::sqlparser::ast;
use iolab_catalog::{sqlstate, PgError};

/// The output format (`FORMAT`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    #[default]
    Text,
    Json,
    Yaml,
    Xml,
}

/// `SERIALIZE`: how the rows are converted for the wire while being discarded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Serialize {
    #[default]
    None,
    Text,
    Binary,
}

/// Every EXPLAIN option after defaults were applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExplainOptions {
    pub analyze: bool,
    pub verbose: bool,
    pub costs: bool,
    pub buffers: bool,
    pub wal: bool,
    /// EXPLAIN (IO): the read streams' look-ahead and I/Os.
    pub io: bool,
    pub timing: bool,
    pub summary: bool,
    pub memory: bool,
    pub settings: bool,
    pub generic_plan: bool,
    pub serialize: Serialize,
    pub format: Format,
}

impl Default for ExplainOptions {
    /// Plain `EXPLAIN statement`.
    fn default() -> Self {
        ExplainOptions {
            analyze: false,
            verbose: false,
            costs: true,
            buffers: false,
            wal: false,
            io: false,
            timing: false,
            summary: false,
            memory: false,
            settings: false,
            generic_plan: false,
            serialize: Serialize::None,
            format: Format::Text,
        }
    }
}

/// An error pointing at a place in the statement (1-based line and column, as sqlparser
/// spans count), turned into a character position by [`ExplainOptions::parse`]'s caller.
#[derive(Debug)]
pub struct OptionError {
    pub error: Box<PgError>,
    pub at: Option<(u64, u64)>,
}

impl From<PgError> for OptionError {
    fn from(error: PgError) -> Self {
        OptionError {
            error: Box::new(error),
            at: None,
        }
    }
}

impl ExplainOptions {
    /// The options of a parsed `EXPLAIN` statement.
    pub fn from_statement(stmt: &ast::Statement) -> Result<ExplainOptions, OptionError> {
        let ast::Statement::Explain {
            analyze,
            verbose,
            query_plan,
            estimate,
            format,
            options,
            ..
        } = stmt
        else {
            return Err(PgError::internal("not an EXPLAIN statement").into());
        };
        // sqlparser also accepts other systems' forms that PostgreSQL's grammar does not.
        let foreign = if *query_plan {
            Some("QUERY")
        } else if *estimate {
            Some("ESTIMATE")
        } else if format.is_some() {
            Some("FORMAT")
        } else {
            None
        };
        if let Some(word) = foreign {
            return Err(PgError::syntax(format!("syntax error at or near \"{word}\"")).into());
        }
        match options {
            Some(list) => Self::parse_list(list),
            None => Self::resolve(
                Given {
                    analyze: *analyze,
                    verbose: *verbose,
                    ..Given::default()
                },
                None,
            ),
        }
    }

    /// The `( option [, …] )` list.
    fn parse_list(list: &[ast::UtilityOption]) -> Result<ExplainOptions, OptionError> {
        let mut given = Given::default();
        for opt in list {
            let name = option_name(&opt.name);
            let at = Some((opt.name.span.start.line, opt.name.span.start.column));
            let located = |error: PgError| OptionError {
                error: Box::new(error),
                at,
            };
            let arg = opt.arg.as_ref();
            match name.as_str() {
                "analyze" => given.analyze = boolean(&name, arg)?,
                "verbose" => given.verbose = boolean(&name, arg)?,
                "costs" => given.costs = Some(boolean(&name, arg)?),
                "buffers" => given.buffers = Some(boolean(&name, arg)?),
                "wal" => given.wal = boolean(&name, arg)?,
                "io" => given.io = boolean(&name, arg)?,
                "settings" => given.settings = boolean(&name, arg)?,
                "generic_plan" => given.generic_plan = boolean(&name, arg)?,
                "timing" => given.timing = Some(boolean(&name, arg)?),
                "summary" => given.summary = Some(boolean(&name, arg)?),
                "memory" => given.memory = boolean(&name, arg)?,
                "serialize" => {
                    given.serialize = match arg {
                        None => Serialize::Text,
                        Some(a) => match string(&name, a)?.to_ascii_lowercase().as_str() {
                            "off" | "none" => Serialize::None,
                            "text" => Serialize::Text,
                            "binary" => Serialize::Binary,
                            _ => return Err(located(bad_value(&name, &string(&name, a)?))),
                        },
                    }
                }
                "format" => {
                    let Some(a) = arg else {
                        return Err(PgError::syntax(format!("{name} requires a parameter")).into());
                    };
                    let value = string(&name, a)?;
                    given.format = match value.to_ascii_lowercase().as_str() {
                        "text" => Format::Text,
                        "json" => Format::Json,
                        "yaml" => Format::Yaml,
                        "xml" => Format::Xml,
                        _ => return Err(located(bad_value(&name, &value))),
                    }
                }
                _ => {
                    return Err(located(PgError::syntax(format!(
                        "unrecognized EXPLAIN option \"{name}\""
                    ))))
                }
            }
        }
        let format = given.format;
        Self::resolve(given, Some(format))
    }

    /// Defaults that follow ANALYZE, then the checks of combinations.
    fn resolve(given: Given, format: Option<Format>) -> Result<ExplainOptions, OptionError> {
        let invalid = |m: &str| -> OptionError {
            PgError::new(sqlstate::INVALID_PARAMETER_VALUE, m.to_string()).into()
        };
        if given.wal && !given.analyze {
            return Err(invalid("EXPLAIN option WAL requires ANALYZE"));
        }
        if given.io && !given.analyze {
            return Err(invalid("EXPLAIN option IO requires ANALYZE"));
        }
        let timing = given.timing.unwrap_or(given.analyze);
        let buffers = given.buffers.unwrap_or(given.analyze);
        if timing && !given.analyze {
            return Err(invalid("EXPLAIN option TIMING requires ANALYZE"));
        }
        if given.serialize != Serialize::None && !given.analyze {
            return Err(invalid("EXPLAIN option SERIALIZE requires ANALYZE"));
        }
        if given.generic_plan && given.analyze {
            return Err(invalid(
                "EXPLAIN options ANALYZE and GENERIC_PLAN cannot be used together",
            ));
        }
        Ok(ExplainOptions {
            analyze: given.analyze,
            verbose: given.verbose,
            costs: given.costs.unwrap_or(true),
            buffers,
            wal: given.wal,
            io: given.io,
            timing,
            summary: given.summary.unwrap_or(given.analyze),
            memory: given.memory,
            settings: given.settings,
            generic_plan: given.generic_plan,
            serialize: given.serialize,
            format: format.unwrap_or(Format::Text),
        })
    }
}

/// Options as written, before defaults (`None` = not given).
#[derive(Default)]
struct Given {
    analyze: bool,
    verbose: bool,
    costs: Option<bool>,
    buffers: Option<bool>,
    wal: bool,
    io: bool,
    settings: bool,
    generic_plan: bool,
    timing: Option<bool>,
    summary: Option<bool>,
    memory: bool,
    serialize: Serialize,
    format: Format,
}

/// PostgreSQL folds unquoted names to lower case; a quoted name stays as written.
fn option_name(ident: &ast::Ident) -> String {
    match ident.quote_style {
        Some(_) => ident.value.clone(),
        None => ident.value.to_lowercase(),
    }
}

/// `defGetBoolean`: no value is true; 1/0, true/false, on/off (any case) are accepted.
fn boolean(name: &str, arg: Option<&ast::Expr>) -> Result<bool, OptionError> {
    let Some(arg) = arg else { return Ok(true) };
    let not_boolean = || PgError::syntax(format!("{name} requires a Boolean value"));
    if let ast::Expr::Value(v) = arg {
        match &v.value {
            ast::Value::Boolean(b) => return Ok(*b),
            ast::Value::Number(n, _) => {
                return match n.as_str() {
                    "0" => Ok(false),
                    "1" => Ok(true),
                    _ => Err(not_boolean().into()),
                }
            }
            _ => {}
        }
    }
    match string(name, arg)?.to_ascii_lowercase().as_str() {
        "true" | "on" => Ok(true),
        "false" | "off" => Ok(false),
        _ => Err(not_boolean().into()),
    }
}

/// `defGetString`: a word, a quoted string or a number, as text.
fn string(name: &str, arg: &ast::Expr) -> Result<String, OptionError> {
    match arg {
        ast::Expr::Identifier(i) => Ok(option_name(i)),
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => Ok(s.clone()),
            ast::Value::Number(n, _) => Ok(n.clone()),
            ast::Value::Boolean(b) => Ok(b.to_string()),
            _ => Err(PgError::syntax(format!("{name} requires a parameter")).into()),
        },
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } => Ok(format!("-{}", string(name, expr)?)),
        other => Err(PgError::syntax(format!("syntax error at or near \"{other}\"")).into()),
    }
}

fn bad_value(name: &str, value: &str) -> PgError {
    PgError::new(
        sqlstate::INVALID_PARAMETER_VALUE,
        format!("unrecognized value for EXPLAIN option \"{name}\": \"{value}\""),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn options(sql: &str) -> Result<ExplainOptions, (String, String)> {
        let stmt = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .expect("parses")
            .remove(0);
        ExplainOptions::from_statement(&stmt)
            .map_err(|e| (e.error.code.to_string(), e.error.message.clone()))
    }

    #[test]
    fn defaults_follow_analyze() {
        let plain = options("EXPLAIN SELECT 1").unwrap();
        assert_eq!(plain, ExplainOptions::default());
        let analyze = options("EXPLAIN ANALYZE SELECT 1").unwrap();
        assert!(analyze.analyze && analyze.buffers && analyze.timing && analyze.summary);
        assert!(analyze.costs && !analyze.verbose);
        let old = options("EXPLAIN ANALYZE VERBOSE SELECT 1").unwrap();
        assert!(old.analyze && old.verbose);
        let off =
            options("EXPLAIN (ANALYZE, BUFFERS OFF, TIMING off, SUMMARY false, COSTS 0) SELECT 1")
                .unwrap();
        assert!(off.analyze && !off.buffers && !off.timing && !off.summary && !off.costs);
        let later_wins =
            options("EXPLAIN (ANALYZE, ANALYZE false, FORMAT xml, format JSON) SELECT 1").unwrap();
        assert!(!later_wins.analyze);
        assert_eq!(later_wins.format, Format::Json);
        let buffers_alone = options("EXPLAIN (BUFFERS) SELECT 1").unwrap();
        assert!(buffers_alone.buffers && !buffers_alone.analyze);
        let quoted = options("EXPLAIN (ANALYZE 'on', SERIALIZE) SELECT 1").unwrap();
        assert_eq!(quoted.serialize, Serialize::Text);
        assert!(options("EXPLAIN (TIMING off, WAL off, SERIALIZE none) SELECT 1").is_ok());
        assert!(!analyze.io, "IO is off by default, as in PostgreSQL 19");
        let io = options("EXPLAIN (ANALYZE, IO) SELECT 1").unwrap();
        assert!(io.io && io.analyze);
        assert!(!options("EXPLAIN (ANALYZE, IO off) SELECT 1").unwrap().io);
    }

    #[test]
    fn postgres_errors() {
        let err = |sql: &str| options(sql).unwrap_err();
        let e = |code: &str, msg: &str| (code.to_string(), msg.to_string());
        assert_eq!(
            err("EXPLAIN (x) SELECT 1"),
            e("42601", "unrecognized EXPLAIN option \"x\"")
        );
        assert_eq!(
            err("EXPLAIN (Foo) SELECT 1"),
            e("42601", "unrecognized EXPLAIN option \"foo\"")
        );
        assert_eq!(
            err("EXPLAIN (TIMING) SELECT 1"),
            e("22023", "EXPLAIN option TIMING requires ANALYZE")
        );
        assert_eq!(
            err("EXPLAIN (WAL) SELECT 1"),
            e("22023", "EXPLAIN option WAL requires ANALYZE")
        );
        assert_eq!(
            err("EXPLAIN (IO) SELECT 1"),
            e("22023", "EXPLAIN option IO requires ANALYZE")
        );
        assert_eq!(
            err("EXPLAIN (IO 2, ANALYZE) SELECT 1"),
            e("42601", "io requires a Boolean value")
        );
        assert_eq!(
            err("EXPLAIN (SERIALIZE) SELECT 1"),
            e("22023", "EXPLAIN option SERIALIZE requires ANALYZE")
        );
        assert_eq!(
            err("EXPLAIN (GENERIC_PLAN, ANALYZE) SELECT 1"),
            e(
                "22023",
                "EXPLAIN options ANALYZE and GENERIC_PLAN cannot be used together"
            )
        );
        assert_eq!(
            err("EXPLAIN (FORMAT foo) SELECT 1"),
            e(
                "22023",
                "unrecognized value for EXPLAIN option \"format\": \"foo\""
            )
        );
        assert_eq!(
            err("EXPLAIN (FORMAT) SELECT 1"),
            e("42601", "format requires a parameter")
        );
        assert_eq!(
            err("EXPLAIN (ANALYZE 2) SELECT 1"),
            e("42601", "analyze requires a Boolean value")
        );
        assert_eq!(
            err("EXPLAIN (COSTS 0.5) SELECT 1"),
            e("42601", "costs requires a Boolean value")
        );
        assert_eq!(
            err("EXPLAIN (SERIALIZE foo, ANALYZE) SELECT 1"),
            e(
                "22023",
                "unrecognized value for EXPLAIN option \"serialize\": \"foo\""
            )
        );
    }
}
