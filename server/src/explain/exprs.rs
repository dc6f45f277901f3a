//! DataFusion physical expressions written as PostgreSQL's `ruleutils.c` deparses them in
//! EXPLAIN: every operator in parentheses (`(a < 140)`), AND/OR lists flattened
//! (`((a > 1) AND (b < 2) AND (c = 3))`), constants with a cast to their type unless the
//! type goes without saying (`140`, `'fffffff'::text`, `'5'::bigint`, `3.5`), casts as
//! `(a)::text`, LIKE as `~~`, IN lists as `= ANY ('{1,2,3}'::integer[])`. Where
//! DataFusion typed operands otherwise than PostgreSQL's parser would, they are written as
//! PostgreSQL types them: a double precision constant as `'5'::double precision`, an
//! integer compared with a fraction as `(a)::numeric`, the narrower integer of `%`, `&`,
//! `|`, `#` cast to the wider. What an upper node shows of an expression computed below it
//! goes in parentheses ([`as_input_reference`]).
//!
//! How a column reads depends on the node the expression runs over (a table column, maybe
//! qualified; an aggregate; an expression computed below): the caller passes that as
//! `column`.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{
    in_list as in_list_expr, BinaryExpr, CaseExpr, CastExpr, Column, DynamicFilterPhysicalExpr,
    InListExpr, IsNotNullExpr, IsNullExpr, LikeExpr, Literal, NegativeExpr, NotExpr, TryCastExpr,
};
use datafusion::physical_expr::scalar_subquery::ScalarSubqueryExpr;
use datafusion::physical_expr::{PhysicalExpr, ScalarFunctionExpr};
use datafusion::scalar::ScalarValue;
use iolab_engine::plan::outer_param::OuterParam;
use iolab_engine::values::output_text::text_value;
use iolab_engine::values::{arrow_type_name, TextFormat};

use crate::sql::checked_arithmetic::CheckedArithmetic;

/// What an expression is evaluated over: how its column `i` reads, and the input's types;
/// and the number of the InitPlan that computes a scalar subquery's value.
pub struct Input<'a> {
    pub column: &'a dyn Fn(usize) -> String,
    pub schema: &'a Schema,
    pub init_plan: &'a dyn Fn(&ScalarSubqueryExpr) -> Option<usize>,
    /// How a nested loop's outer value (an expression over its outer side) reads.
    pub outer_value: &'a dyn Fn(&Arc<dyn PhysicalExpr>) -> String,
}

/// The expression as PostgreSQL prints it.
pub fn deparse(expr: &Arc<dyn PhysicalExpr>, input: &Input) -> String {
    let e = expr.as_ref();
    if let Some(c) = e.downcast_ref::<Column>() {
        return (input.column)(c.index());
    }
    if let Some(l) = e.downcast_ref::<Literal>() {
        return literal(l.value());
    }
    if let Some(p) = e.downcast_ref::<OuterParam>() {
        return (input.outer_value)(&p.outer);
    }
    if let Some(s) = e.downcast_ref::<ScalarSubqueryExpr>() {
        return match (input.init_plan)(s) {
            Some(n) => format!("(InitPlan {n}).col1"),
            None => "(InitPlan).col1".into(),
        };
    }
    if let Some(b) = e.downcast_ref::<BinaryExpr>() {
        if matches!(b.op(), Operator::And | Operator::Or) {
            let mut items = Vec::new();
            flatten(expr, b.op(), &mut items);
            let word = if *b.op() == Operator::And {
                " AND "
            } else {
                " OR "
            };
            let items: Vec<String> = items.iter().map(|i| deparse(i, input)).collect();
            return format!("({})", items.join(word));
        }
        let (left, right) = float_operands(b, input)
            .or_else(|| integer_operands(b, input))
            .unwrap_or_else(|| (deparse(b.left(), input), deparse(b.right(), input)));
        return match b.op() {
            Operator::IsNotDistinctFrom => format!("(NOT ({left} IS DISTINCT FROM {right}))"),
            op => format!("({left} {} {right})", operator(op)),
        };
    }
    if let Some(l) = e.downcast_ref::<LikeExpr>() {
        let op = match (l.negated(), l.case_insensitive()) {
            (false, false) => "~~",
            (true, false) => "!~~",
            (false, true) => "~~*",
            (true, true) => "!~~*",
        };
        return format!(
            "({} {op} {})",
            deparse(l.expr(), input),
            deparse(l.pattern(), input)
        );
    }
    if let Some(n) = e.downcast_ref::<NotExpr>() {
        return format!("(NOT {})", deparse(n.arg(), input));
    }
    if let Some(n) = e.downcast_ref::<IsNullExpr>() {
        return format!("({} IS NULL)", deparse(n.arg(), input));
    }
    if let Some(n) = e.downcast_ref::<IsNotNullExpr>() {
        return format!("({} IS NOT NULL)", deparse(n.arg(), input));
    }
    if let Some(n) = e.downcast_ref::<NegativeExpr>() {
        return format!("(- {})", deparse(n.arg(), input));
    }
    if let Some(i) = e.downcast_ref::<InListExpr>() {
        return in_list(i, input);
    }
    if let Some(c) = e.downcast_ref::<CastExpr>() {
        return cast(c.expr(), c.cast_type(), input);
    }
    if let Some(c) = e.downcast_ref::<TryCastExpr>() {
        return cast(c.expr(), c.cast_type(), input);
    }
    if let Some(c) = e.downcast_ref::<CaseExpr>() {
        if let Some(items) = coalesce_items(c) {
            let items: Vec<String> = items.iter().map(|i| deparse(i, input)).collect();
            return format!("COALESCE({})", items.join(", "));
        }
        let mut s = String::from("CASE");
        if let Some(x) = c.expr() {
            s.push_str(&format!(" {}", deparse(x, input)));
        }
        for (when, then) in c.when_then_expr() {
            s.push_str(&format!(
                " WHEN {} THEN {}",
                deparse(when, input),
                deparse(then, input)
            ));
        }
        if let Some(x) = c.else_expr() {
            s.push_str(&format!(" ELSE {}", deparse(x, input)));
        }
        s.push_str(" END");
        return s;
    }
    if let Some(marker) = iolab_engine::plan::statement_params::marker_of(expr) {
        return marker.name().to_string();
    }
    if let Some(p) = e.downcast_ref::<iolab_engine::plan::statement_params::BoundParameter>() {
        return p.name().to_string();
    }
    if let Some(f) = e.downcast_ref::<ScalarFunctionExpr>() {
        let args: Vec<String> = f.args().iter().map(|a| deparse(a, input)).collect();
        if let (Some(op), [l, r]) = (CheckedArithmetic::op_named(f.name()), args.as_slice()) {
            return format!("({l} {} {r})", op.symbol());
        }
        return function_call(f, args);
    }
    e.to_string()
}

/// The arguments of the `COALESCE(x, y, …, z)` DataFusion wrote as `CASE WHEN x IS NOT
/// NULL THEN x WHEN y IS NOT NULL THEN y … ELSE z END`.
fn coalesce_items(c: &CaseExpr) -> Option<Vec<Arc<dyn PhysicalExpr>>> {
    if c.expr().is_some() {
        return None;
    }
    let mut items = Vec::new();
    for (when, then) in c.when_then_expr() {
        let tested = when.downcast_ref::<IsNotNullExpr>()?.arg();
        if tested.as_ref() != then.as_ref() {
            return None;
        }
        items.push(then.clone());
    }
    items.push(c.else_expr()?.clone());
    Some(items)
}

/// A function call as PostgreSQL writes it: `EXTRACT(hour FROM e)` in SQL's syntax, and
/// `length(b)` by the name the query most likely used (DataFusion calls `length`,
/// `char_length` and `character_length` all `character_length`).
fn function_call(f: &ScalarFunctionExpr, args: Vec<String>) -> String {
    let field = f
        .args()
        .first()
        .and_then(|a| match a.downcast_ref::<Literal>()?.value() {
            ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)) => Some(s.clone()),
            _ => None,
        });
    match (f.name(), field, args.as_slice()) {
        ("extract", Some(field), [_, from]) => format!("EXTRACT({field} FROM {from})"),
        ("character_length", _, _) => format!("length({})", args.join(", ")),
        (name, _, _) => format!("{name}({})", args.join(", ")),
    }
}

/// The operands of a binary operator with a double precision constant on one side, as
/// PostgreSQL's parser would have typed them. It types a constant with a fraction as
/// numeric and an integer one as integer, and casts the constant to the other operand's
/// type: against a double precision operand it is a double precision constant
/// (`(c > '5'::double precision)`); against an integer, cast to double precision by
/// DataFusion, PostgreSQL casts the integer to numeric instead (`((a)::numeric > 5.5)`).
/// None when neither or both operands are such constants.
fn float_operands(b: &BinaryExpr, input: &Input) -> Option<(String, String)> {
    match (float_constant(b.left()), float_constant(b.right())) {
        (Some(v), None) => typed_against(v, b.right(), input),
        (None, Some(v)) => typed_against(v, b.left(), input).map(|(c, other)| (other, c)),
        _ => None,
    }
}

/// (the constant, the other operand) as PostgreSQL writes them (see `float_operands`).
fn typed_against(v: f64, other: &Arc<dyn PhysicalExpr>, input: &Input) -> Option<(String, String)> {
    if other.data_type(input.schema).ok()? != DataType::Float64 {
        return None;
    }
    let cast_integer = other.downcast_ref::<CastExpr>().filter(|c| {
        c.expr()
            .data_type(input.schema)
            .is_ok_and(|t| t.is_integer())
    });
    if let Some(c) = cast_integer {
        let constant = if v >= 0.0 {
            literal(&ScalarValue::Float64(Some(v)))
        } else {
            format!(
                "{}::numeric",
                quote(&value_text(&ScalarValue::Float64(Some(v))))
            )
        };
        return Some((constant, format!("({})::numeric", deparse(c.expr(), input))));
    }
    let constant = format!(
        "{}::double precision",
        quote(&value_text(&ScalarValue::Float64(Some(v))))
    );
    Some((constant, deparse(other, input)))
}

/// The operands of `%`, `&`, `|` or `#` on integers of different widths, as PostgreSQL
/// writes them. Unlike comparisons and `+ - * /`, these have no cross-width versions
/// there, so the narrower operand is cast to the wider: `((g)::integer % 3)` for a smallint
/// column, `(f % '2'::bigint)` for a bigint one (a constant is an integer unless it does
/// not fit one). DataFusion widened one side too, but the casts it hides
/// (`implicit_cast`) are not always those. None for other operators and equal widths.
fn integer_operands(b: &BinaryExpr, input: &Input) -> Option<(String, String)> {
    let [(left, left_width), (right, right_width)] = mixed_width_operands(b, input.schema)?;
    let wider = left_width.max(right_width);
    let shown = |e: &Arc<dyn PhysicalExpr>, width: IntWidth| {
        if width == wider {
            return deparse(e, input);
        }
        let ty = wider.type_name();
        match e.downcast_ref::<Literal>() {
            Some(l) => format!("{}::{ty}", quote(&value_text(l.value()))),
            None => format!("({})::{ty}", deparse(e, input)),
        }
    };
    Some((shown(&left, left_width), shown(&right, right_width)))
}

/// An integer type's width in PostgreSQL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum IntWidth {
    Small,
    Int,
    Big,
}

impl IntWidth {
    fn type_name(self) -> &'static str {
        match self {
            IntWidth::Small => "smallint",
            IntWidth::Int => "integer",
            IntWidth::Big => "bigint",
        }
    }
}

/// The operands of `%`, `&`, `|` or `#` (see `integer_operands`) without DataFusion's
/// widening casts, with their widths in PostgreSQL, when the widths differ.
pub(crate) fn mixed_width_operands(
    b: &BinaryExpr,
    schema: &Schema,
) -> Option<[(Arc<dyn PhysicalExpr>, IntWidth); 2]> {
    use Operator::{BitwiseAnd, BitwiseOr, BitwiseXor, Modulo};
    if !matches!(b.op(), Modulo | BitwiseAnd | BitwiseOr | BitwiseXor) {
        return None;
    }
    let operand = |e: &Arc<dyn PhysicalExpr>| -> Option<(Arc<dyn PhysicalExpr>, IntWidth)> {
        let mut e = e.clone();
        while let Some(inner) = e.downcast_ref::<CastExpr>().map(|c| c.expr().clone()) {
            let (from, to) = (inner.data_type(schema).ok()?, e.data_type(schema).ok()?);
            let constant = inner.as_ref().is::<Literal>();
            if !constant && !(from.is_integer() && implicit_cast(&from, &to)) {
                break;
            }
            e = inner;
        }
        let width = match e.downcast_ref::<Literal>().map(|l| l.value().clone()) {
            // A constant is an integer unless it does not fit one.
            Some(v) => match v.cast_to(&DataType::Int64).ok()? {
                ScalarValue::Int64(Some(n)) if i32::try_from(n).is_ok() => IntWidth::Int,
                ScalarValue::Int64(Some(_)) => IntWidth::Big,
                _ => return None,
            },
            None => match e.data_type(schema).ok()? {
                DataType::Int8 | DataType::Int16 => IntWidth::Small,
                DataType::Int32 => IntWidth::Int,
                DataType::Int64 => IntWidth::Big,
                _ => return None,
            },
        };
        Some((e, width))
    };
    let operands = [operand(b.left())?, operand(b.right())?];
    (operands[0].1 != operands[1].1).then_some(operands)
}

/// The value of a double precision constant, or of a constant cast to double precision.
fn float_constant(e: &Arc<dyn PhysicalExpr>) -> Option<f64> {
    let value = if let Some(l) = e.downcast_ref::<Literal>() {
        l.value().clone()
    } else if let Some(c) = e.downcast_ref::<CastExpr>() {
        let l = c.expr().downcast_ref::<Literal>()?;
        l.value().cast_to(c.cast_type()).ok()?
    } else {
        return None;
    };
    match value {
        ScalarValue::Float64(Some(v)) => Some(v),
        _ => None,
    }
}

/// `e` reads a column as it is, or widened by a cast PostgreSQL would not make (its
/// operators take mixed integer widths: DataFusion casts `int4 = int8`'s left side).
pub fn is_plain_column(e: &Arc<dyn PhysicalExpr>, schema: &Schema) -> bool {
    if e.as_ref().is::<Column>() {
        return true;
    }
    e.downcast_ref::<CastExpr>().is_some_and(|c| {
        c.expr().as_ref().is::<Column>()
            && c.expr()
                .data_type(schema)
                .is_ok_and(|from| implicit_cast(&from, c.cast_type()))
    })
}

/// How an upper node shows a column of its input: PostgreSQL's ruleutils puts anything
/// but a plain column reference (`a`, `t.a`, `"T"."A"`) in parentheses there, since the
/// node refers to its input's value, not to the expression (`Sort Key: ((a + 1))`,
/// `Output: a, (count(*))`).
pub fn as_input_reference(text: String) -> String {
    if is_column_reference(&text) {
        text
    } else {
        format!("({text})")
    }
}

/// `text` is one to three identifiers, plain or quoted, joined by dots.
fn is_column_reference(text: &str) -> bool {
    let mut parts = 0;
    let mut rest = text;
    loop {
        let taken = if let Some(quoted) = rest.strip_prefix('"') {
            let mut end = None;
            let mut chars = quoted.char_indices().peekable();
            while let Some((i, c)) = chars.next() {
                if c == '"' {
                    if chars.peek().is_some_and(|&(_, n)| n == '"') {
                        chars.next();
                    } else {
                        end = Some(i + 2);
                        break;
                    }
                }
            }
            match end {
                Some(end) => end,
                None => return false,
            }
        } else {
            let first_ok = rest
                .chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$');
            let len = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
                .unwrap_or(rest.len());
            if !first_ok || len == 0 {
                return false;
            }
            len
        };
        parts += 1;
        rest = &rest[taken..];
        match rest.strip_prefix('.') {
            Some(next) if parts < 3 => rest = next,
            Some(_) => return false,
            None => return rest.is_empty(),
        }
    }
}

/// An index condition as PostgreSQL 18 shows it: an OR of one column's equalities with
/// constants, which the index scans as a list (`plan::index_cond::or_of_equalities`), as
/// `col = ANY ('{…}')`; any other condition as it is.
pub fn as_index_cond(e: &Arc<dyn PhysicalExpr>, schema: &Schema) -> Arc<dyn PhysicalExpr> {
    let list = || {
        let mut column: Option<Arc<dyn PhysicalExpr>> = None;
        let mut values = Vec::new();
        for arm in iolab_engine::plan::index_cond::or_arms(e)? {
            let b = arm
                .downcast_ref::<BinaryExpr>()
                .filter(|b| *b.op() == Operator::Eq)?;
            let (col, value) = match (b.left().is::<Literal>(), b.right().is::<Literal>()) {
                (false, true) => (b.left(), b.right()),
                (true, false) => (b.right(), b.left()),
                _ => return None,
            };
            match &column {
                None => column = Some(col.clone()),
                Some(c) if c.as_ref() == col.as_ref() => {}
                Some(_) => return None,
            }
            values.push(value.clone());
        }
        in_list_expr(column?, values, &false, schema).ok()
    };
    list().unwrap_or_else(|| e.clone())
}

/// The conjuncts of a predicate (its top-level AND list), leaving out DataFusion's
/// dynamic filters (runtime pruning that PostgreSQL has no qual for).
pub fn conjuncts(e: &Arc<dyn PhysicalExpr>) -> Vec<Arc<dyn PhysicalExpr>> {
    let mut items = Vec::new();
    flatten(e, &Operator::And, &mut items);
    items.retain(|i| !i.as_ref().is::<DynamicFilterPhysicalExpr>());
    items
}

/// A list of conjuncts as one qual, the way PostgreSQL shows an implicit-AND qual list.
pub fn deparse_qual(quals: &[Arc<dyn PhysicalExpr>], input: &Input) -> Option<String> {
    match quals {
        [] => None,
        [one] => Some(deparse(one, input)),
        many => {
            let items: Vec<String> = many.iter().map(|i| deparse(i, input)).collect();
            Some(format!("({})", items.join(" AND ")))
        }
    }
}

fn flatten(e: &Arc<dyn PhysicalExpr>, op: &Operator, out: &mut Vec<Arc<dyn PhysicalExpr>>) {
    match e.as_ref().downcast_ref::<BinaryExpr>() {
        Some(b) if b.op() == op => {
            flatten(b.left(), op, out);
            flatten(b.right(), op, out);
        }
        _ => out.push(e.clone()),
    }
}

fn operator(op: &Operator) -> String {
    match op {
        Operator::Eq => "=".into(),
        Operator::NotEq => "<>".into(),
        Operator::Lt => "<".into(),
        Operator::LtEq => "<=".into(),
        Operator::Gt => ">".into(),
        Operator::GtEq => ">=".into(),
        Operator::Plus => "+".into(),
        Operator::Minus => "-".into(),
        Operator::Multiply => "*".into(),
        Operator::Divide => "/".into(),
        Operator::Modulo => "%".into(),
        Operator::IsDistinctFrom => "IS DISTINCT FROM".into(),
        Operator::RegexMatch => "~".into(),
        Operator::RegexIMatch => "~*".into(),
        Operator::RegexNotMatch => "!~".into(),
        Operator::RegexNotIMatch => "!~*".into(),
        Operator::LikeMatch => "~~".into(),
        Operator::ILikeMatch => "~~*".into(),
        Operator::NotLikeMatch => "!~~".into(),
        Operator::NotILikeMatch => "!~~*".into(),
        Operator::StringConcat => "||".into(),
        Operator::BitwiseAnd => "&".into(),
        Operator::BitwiseOr => "|".into(),
        Operator::BitwiseXor => "#".into(),
        Operator::BitwiseShiftLeft => "<<".into(),
        Operator::BitwiseShiftRight => ">>".into(),
        other => other.to_string(),
    }
}

fn cast(inner: &Arc<dyn PhysicalExpr>, to: &DataType, input: &Input) -> String {
    if let Some(l) = inner.as_ref().downcast_ref::<Literal>() {
        if let Ok(v) = l.value().cast_to(to) {
            return literal(&v);
        }
    }
    let shown = deparse(inner, input);
    match inner.data_type(input.schema) {
        Ok(from) if implicit_cast(&from, to) => shown,
        _ => format!("({shown})::{}", arrow_type_name(to)),
    }
}

/// Casts PostgreSQL would not write: widening an integer or a float (its operators take
/// mixed widths), and between DataFusion's string representations.
pub(crate) fn implicit_cast(from: &DataType, to: &DataType) -> bool {
    let int_rank = |t: &DataType| match t {
        DataType::Int8 => Some(1),
        DataType::Int16 => Some(2),
        DataType::Int32 => Some(3),
        DataType::Int64 => Some(4),
        _ => None,
    };
    let is_string =
        |t: &DataType| matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View);
    match (int_rank(from), int_rank(to)) {
        (Some(a), Some(b)) => a <= b,
        _ => {
            (is_string(from) && is_string(to))
                || matches!((from, to), (DataType::Float32, DataType::Float64))
                || from == to
        }
    }
}

/// `x = ANY ('{1,2,3}'::integer[])`, or an OR of equalities when the list is not all
/// constants.
fn in_list(i: &InListExpr, input: &Input) -> String {
    let x = deparse(i.expr(), input);
    let values: Option<Vec<&ScalarValue>> = i
        .list()
        .iter()
        .map(|e| e.as_ref().downcast_ref::<Literal>().map(|l| l.value()))
        .collect();
    match values {
        Some(values) if !values.is_empty() => {
            let elems: Vec<String> = values.iter().map(|v| array_element(v)).collect();
            // A smallint column's list is integers: PostgreSQL compares int2 with int4.
            let ty = match values[0].data_type() {
                DataType::Int16 => "integer".to_string(),
                other => arrow_type_name(&other),
            };
            let array = quote(&format!("{{{}}}", elems.join(",")));
            if i.negated() {
                format!("({x} <> ALL ({array}::{ty}[]))")
            } else {
                format!("({x} = ANY ({array}::{ty}[]))")
            }
        }
        _ => {
            let (op, join) = if i.negated() {
                ("<>", " AND ")
            } else {
                ("=", " OR ")
            };
            let items: Vec<String> = i
                .list()
                .iter()
                .map(|e| format!("({x} {op} {})", deparse(e, input)))
                .collect();
            format!("({})", items.join(join))
        }
    }
}

/// A value inside an array literal, double-quoted when PostgreSQL's `array_out` would.
fn array_element(v: &ScalarValue) -> String {
    if v.is_null() {
        return "NULL".into();
    }
    let text = value_text(v);
    let needs_quotes = text.is_empty()
        || text.eq_ignore_ascii_case("null")
        || text
            .chars()
            .any(|c| matches!(c, '{' | '}' | ',' | '"' | '\\') || c.is_whitespace());
    if needs_quotes {
        let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
        format!("\"{escaped}\"")
    } else {
        text
    }
}

/// A value as PostgreSQL's output function writes it (for the types iolab has).
fn value_text(v: &ScalarValue) -> String {
    match v {
        ScalarValue::Boolean(Some(b)) => if *b { "t" } else { "f" }.into(),
        other => other
            .to_array()
            .ok()
            .and_then(|a| text_value(a.as_ref(), 0, &TextFormat::default()))
            .unwrap_or_else(|| other.to_string()),
    }
}

/// `simple_quote_literal`.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// A constant as `get_const_expr` prints it.
pub fn literal(v: &ScalarValue) -> String {
    let ty = arrow_type_name(&v.data_type());
    if v.is_null() {
        return format!("NULL::{ty}");
    }
    match v {
        ScalarValue::Boolean(Some(b)) => if *b { "true" } else { "false" }.into(),
        // A SQL integer literal is int4 in PostgreSQL when it fits. Compared with a
        // smallint or bigint column it is printed as written (PostgreSQL has cross-type
        // operators); DataFusion made it the column's type.
        ScalarValue::Int32(Some(i)) if *i >= 0 => i.to_string(),
        ScalarValue::Int16(Some(i)) if *i >= 0 => i.to_string(),
        ScalarValue::Int64(Some(i)) if (0..=i32::MAX as i64).contains(i) => i.to_string(),
        ScalarValue::Int64(Some(i)) if (i32::MIN as i64..0).contains(i) => {
            format!("'{i}'::integer")
        }
        // A SQL literal with a fraction is numeric in PostgreSQL, Float64 in DataFusion.
        ScalarValue::Float64(Some(f)) if f.is_finite() && *f >= 0.0 => {
            let text = f.to_string();
            if text.contains(['.', 'e']) {
                text
            } else {
                format!("{text}.0")
            }
        }
        ScalarValue::Decimal128(..) | ScalarValue::Decimal256(..) => {
            let text = value_text(v);
            let plain = text.starts_with(|c: char| c.is_ascii_digit());
            if plain && text.contains(['.', 'e', 'E']) {
                text
            } else {
                format!("{}::numeric", quote(&text))
            }
        }
        _ => format!("{}::{ty}", quote(&value_text(v))),
    }
}
