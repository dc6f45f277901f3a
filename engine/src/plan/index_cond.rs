//! Which WHERE conjuncts a B-tree index can answer, as ranges of its keys.
//!
//! A conjunct is a **simple clause** when it compares one column of the table with a
//! constant: `col op const` or `const op col` (turned round so the column is on the left),
//! with `op` one of `=`, `<>`, `<`, `<=`, `>`, `>=`, or `col IS [NOT] NULL`. The constant
//! may be a cast of a literal (evaluated here); the column may be widened from a smaller
//! integer type, as DataFusion does when it cannot unwrap the cast itself. The constant is
//! kept as a [`StatValue`] of the column's type, which is how `pg_stats` holds values too,
//! so the selectivity code compares it with MCVs and histogram bounds directly.
//!
//! A **list clause** `col IN (constants)` (PostgreSQL's `col = ANY (array)`) selects the
//! keys equal to its values ([`KeySet::AnyOf`]: ascending, without NULLs, which equal
//! nothing; a clause only when every constant compares exactly). On an index's first
//! column the scan descends once per value (`btree::scan`, `ColumnKeys::AnyOf`), in
//! ascending order, so it gives an `ORDER BY` of the index's columns (not a descending
//! one: the values are not scanned backward); on later columns it stays in the filter. (DataFusion hands lists of up to three values over as
//! ORs of equalities, which become BitmapOrs.)
//!
//! An index on column `c` takes every simple clause on `c` except `<>`, and intersects them
//! into one [`KeySet`]: `a >= 10 AND a < 20` is the single range `[10, 20)`, `a = 5` is
//! `[5, 5]`, `a IS NOT NULL` the range without bounds (every key but NULL), `a IS NULL`
//! the NULL keys (alone: with a range besides it the range is left to the filter). The
//! clauses used become the node's `Index Cond:`.
//!
//! An index on several columns is used when any of its columns has such clauses; the
//! clauses on its later columns join the condition the same way, one [`KeySet`] per
//! column, and the B-tree scan bounds its stretch of the index with the leading columns,
//! tests each entry for the rest, and skips through the first column's values when it does
//! not bound the scan (PostgreSQL 18's skip scan, `btree::scan`). `Index Cond:` lists them
//! in the index's column order, as PostgreSQL does: `((a = 5) AND (b < 100))`.
//!
//! # Never a row too few
//!
//! A scan built from an [`IndexCond`] must return *every* row the clauses accept (a few
//! more are harmless: DataFusion's filter above the scan tests every conjunct again). So
//! a constant is only taken when it compares exactly as the index's keys do:
//!
//! * integer constants for integer keys, integer or float constants for float keys,
//!   decimals at most as fine as the column's scale for numeric keys, strings for text and
//!   varchar, dates for dates, microsecond timestamps for timestamps, booleans for bool;
//! * never for `char(n)`: the index ignores trailing blanks where DataFusion's string
//!   comparison does not;
//! * for floats, an exclusive bound at ±0 becomes inclusive: the index holds −0 = +0
//!   (`float8_ops`) while Arrow's total order puts −0 below +0, so `a < 0` matches a stored
//!   −0 there. (A negative NaN, which Arrow sorts below −∞, is the one value this still
//!   misses; SQL cannot produce one.)
//!
//! The recheck of lossy bitmap pages ([`KeyTest`]) tests the same ranges with the index's
//! own comparison, so it too keeps a superset.
//!
//! # Values known when the scan starts
//!
//! A **parameter clause** compares a column with an expression of no column that holds
//! an uncorrelated scalar subquery: `a = (SELECT max(a) FROM t)`, whose value DataFusion
//! computes once before the scan runs (PostgreSQL's InitPlan and its `PARAM_EXEC`). An
//! index takes one (`=`, `<`, `<=`, `>`, `>=`) when no constant clause is on its column:
//! [`KeySet::Param`], resolved into a range when the scan starts ([`IndexCond::scan`]).
//! A NULL value selects no key; a value that does not compare exactly as the keys do
//! selects every non-NULL key (a superset again). A lossy page's recheck leaves such a
//! clause to the filter above. A generic plan's `$n` (`statement_params`) is one too: its
//! value is the statement's.
//!
//! The same holds for a nested loop's outer row's value ([`OuterParam`]), with two
//! differences: the scan runs once per outer row, each time with the value bound by the
//! nested loop ([`IndexCond::scan_for`]); and the planner takes it only for `=` on a
//! column whose keys compare exactly with the value's type ([`comparable_type`]), so every
//! non-NULL value selects exactly its keys.

use std::ops::Bound;
use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::datatypes::Schema;
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::logical_expr::ColumnarValue;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{
    BinaryExpr, CastExpr, Column, InListExpr, IsNotNullExpr, IsNullExpr, Literal, TryCastExpr,
};
use datafusion::physical_expr::scalar_subquery::ScalarSubqueryExpr;
use datafusion::physical_expr::utils::collect_columns;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::scalar::ScalarValue;
use iolab_catalog::statistics::StatValue;
use iolab_catalog::{ColumnDef, IndexDef, PgError, PgResult, PgType};

use crate::accounting::IoAccount;
use crate::btree::key::{self, Key, KeyKind};
use crate::btree::scan::ColumnKeys;
use crate::btree::{BtreeIndex, BtreeScan};
use crate::heap::codec::{Datum, TupleLayout};
use crate::plan::outer_param::OuterParam;
use crate::plan::statement_params::{bind_markers, marker_of};
use crate::plan::ScanOrder;

/// A comparison operator with the column on its left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CompareOp {
    fn of(op: &Operator) -> Option<CompareOp> {
        Some(match op {
            Operator::Eq => CompareOp::Eq,
            Operator::NotEq => CompareOp::Ne,
            Operator::Lt => CompareOp::Lt,
            Operator::LtEq => CompareOp::Le,
            Operator::Gt => CompareOp::Gt,
            Operator::GtEq => CompareOp::Ge,
            _ => return None,
        })
    }

    /// The operator with its operands swapped (`5 < a` is `a > 5`).
    fn commuted(self) -> CompareOp {
        match self {
            CompareOp::Lt => CompareOp::Gt,
            CompareOp::Le => CompareOp::Ge,
            CompareOp::Gt => CompareOp::Lt,
            CompareOp::Ge => CompareOp::Le,
            other => other,
        }
    }
}

/// What a simple clause says about its column.
#[derive(Clone, Debug, PartialEq)]
pub enum ClauseTest {
    Compare(CompareOp, StatValue),
    IsNull,
    IsNotNull,
}

/// A conjunct that compares one table column with a constant (see the module comment).
#[derive(Clone, Debug, PartialEq)]
pub struct SimpleClause {
    /// Table column number, 0-based.
    pub column: usize,
    pub test: ClauseTest,
}

/// `e` as a simple clause over a table whose columns are `columns`, if it is one.
pub fn simple_clause(e: &Arc<dyn PhysicalExpr>, columns: &[ColumnDef]) -> Option<SimpleClause> {
    let e = e.as_ref();
    if let Some(n) = e.downcast_ref::<IsNullExpr>() {
        let column = column_of(n.arg(), columns)?;
        return Some(SimpleClause {
            column,
            test: ClauseTest::IsNull,
        });
    }
    if let Some(n) = e.downcast_ref::<IsNotNullExpr>() {
        let column = column_of(n.arg(), columns)?;
        return Some(SimpleClause {
            column,
            test: ClauseTest::IsNotNull,
        });
    }
    let b = e.downcast_ref::<BinaryExpr>()?;
    let op = CompareOp::of(b.op())?;
    let (column, constant, op) = match (column_of(b.left(), columns), column_of(b.right(), columns))
    {
        (Some(c), None) => (c, constant_of(b.right())?, op),
        (None, Some(c)) => (c, constant_of(b.left())?, op.commuted()),
        _ => return None,
    };
    let value = comparable_value(&constant, columns[column].ty)?;
    Some(SimpleClause {
        column,
        test: ClauseTest::Compare(op, value),
    })
}

/// A conjunct comparing a column with a value computed before the scan runs (see "Values
/// known when the scan starts" in the module comment).
#[derive(Clone, Debug)]
pub struct ParamClause {
    /// Table column number, 0-based.
    pub column: usize,
    pub op: CompareOp,
    pub value: Arc<dyn PhysicalExpr>,
}

/// `e` as a parameter clause over a table whose columns are `columns`, if it is one.
pub fn param_clause(e: &Arc<dyn PhysicalExpr>, columns: &[ColumnDef]) -> Option<ParamClause> {
    let b = e.as_ref().downcast_ref::<BinaryExpr>()?;
    let op = CompareOp::of(b.op()).filter(|op| *op != CompareOp::Ne)?;
    let (column, value, op) = match (column_of(b.left(), columns), column_of(b.right(), columns)) {
        (Some(c), None) => (c, b.right(), op),
        (None, Some(c)) => (c, b.left(), op.commuted()),
        _ => return None,
    };
    is_param(value).then(|| ParamClause {
        column,
        op,
        value: value.clone(),
    })
}

/// An expression of no column holding a scalar subquery (one value for the whole scan) or
/// a generic plan's `$n` (one value for the statement), or a nested loop's outer value
/// (one per scan).
pub fn is_param(e: &Arc<dyn PhysicalExpr>) -> bool {
    if e.downcast_ref::<OuterParam>().is_some() {
        return true;
    }
    let mut known_at_start = false;
    let _ = e.apply(|n| {
        known_at_start |=
            n.as_ref().downcast_ref::<ScalarSubqueryExpr>().is_some() || marker_of(n).is_some();
        Ok(TreeNodeRecursion::Continue)
    });
    known_at_start && collect_columns(e).is_empty()
}

/// The values of `e` if it is `column IN (constants)` (not NOT IN) whose every constant
/// compares exactly as the column's keys (NULLs, which equal nothing, left out):
/// ascending, without repeats.
fn in_list_clause(
    e: &Arc<dyn PhysicalExpr>,
    column: usize,
    columns: &[ColumnDef],
) -> Option<Vec<StatValue>> {
    let list = e.as_ref().downcast_ref::<InListExpr>()?;
    if list.negated() || column_of(list.expr(), columns) != Some(column) {
        return None;
    }
    let ty = columns[column].ty;
    let mut values = Vec::with_capacity(list.list().len());
    for item in list.list() {
        let v = constant_of(item)?;
        if v.is_null() {
            continue;
        }
        values.push(comparable_value(&v, ty)?);
    }
    values.sort();
    values.dedup();
    Some(values)
}

/// The values of `e` if it is an OR of `column = constant` arms, every one on `column`
/// (`a = 1 OR a = 2`, which DataFusion makes of `a IN (1, 2)`): ascending, without
/// repeats. PostgreSQL 18 scans such an OR as `a = ANY ('{1,2}')` (`match_orclause_to_indexcol`).
pub fn or_of_equalities(
    e: &Arc<dyn PhysicalExpr>,
    column: usize,
    columns: &[ColumnDef],
) -> Option<Vec<StatValue>> {
    let mut values = Vec::new();
    for arm in or_arms(e)? {
        let clause = simple_clause(&arm, columns).filter(|c| c.column == column)?;
        let ClauseTest::Compare(CompareOp::Eq, v) = clause.test else {
            return None;
        };
        values.push(v);
    }
    values.sort();
    values.dedup();
    Some(values)
}

/// The table column `e` reads: a column, or one widened to a larger integer type.
fn column_of(e: &Arc<dyn PhysicalExpr>, columns: &[ColumnDef]) -> Option<usize> {
    if let Some(c) = e.as_ref().downcast_ref::<Column>() {
        return (c.index() < columns.len()).then_some(c.index());
    }
    let cast = e.as_ref().downcast_ref::<CastExpr>()?;
    let column = column_of(cast.expr(), columns)?;
    let from = columns[column].ty.arrow_type();
    let widening = from.is_signed_integer()
        && cast.cast_type().is_signed_integer()
        && int_width(&from) <= int_width(cast.cast_type());
    // Another layout of the same text (`Utf8View`, which a text parameter may be):
    // compared byte for byte either way.
    let is_text =
        |t: &DataType| matches!(t, DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8);
    let relaid_text = is_text(&from) && is_text(cast.cast_type());
    (widening || relaid_text).then_some(column)
}

fn int_width(t: &DataType) -> usize {
    t.primitive_width().unwrap_or(usize::MAX)
}

/// The value of a constant expression: a literal, or a cast of one.
fn constant_of(e: &Arc<dyn PhysicalExpr>) -> Option<ScalarValue> {
    let e = e.as_ref();
    if let Some(l) = e.downcast_ref::<Literal>() {
        return Some(l.value().clone());
    }
    if let Some(c) = e.downcast_ref::<CastExpr>() {
        return constant_of(c.expr())?.cast_to(c.cast_type()).ok();
    }
    if let Some(c) = e.downcast_ref::<TryCastExpr>() {
        return constant_of(c.expr())?.cast_to(c.cast_type()).ok();
    }
    None
}

/// `v` as a value of a column of type `ty`, when it compares exactly as the column's index
/// keys do (see the module comment); `None` otherwise, and for NULL.
pub fn comparable_value(v: &ScalarValue, ty: PgType) -> Option<StatValue> {
    use ScalarValue as S;
    let integer = matches!(
        v,
        S::Int8(Some(_))
            | S::Int16(Some(_))
            | S::Int32(Some(_))
            | S::Int64(Some(_))
            | S::UInt8(Some(_))
            | S::UInt16(Some(_))
            | S::UInt32(Some(_))
            | S::UInt64(Some(_))
    );
    let exact = match KeyKind::of(ty) {
        KeyKind::Int => integer,
        KeyKind::Float => integer || matches!(v, S::Float32(Some(_)) | S::Float64(Some(_))),
        KeyKind::Numeric => match (v, ty) {
            (S::Decimal128(Some(_), _, s), PgType::Numeric { scale, .. }) => *s <= scale,
            _ => false,
        },
        KeyKind::Text => matches!(
            v,
            S::Utf8(Some(_)) | S::LargeUtf8(Some(_)) | S::Utf8View(Some(_))
        ),
        KeyKind::Bpchar => false,
        KeyKind::Date => matches!(v, S::Date32(Some(_))),
        KeyKind::Timestamp => matches!(v, S::TimestampMicrosecond(Some(_), _)),
        KeyKind::Bool => matches!(v, S::Boolean(Some(_))),
    };
    exact.then(|| StatValue::from_scalar(v, ty)).flatten()
}

/// Whether every non-NULL value of Arrow type `dt` compares exactly as the keys of a column
/// of type `ty` do (`comparable_value` takes each).
pub fn comparable_type(dt: &DataType, ty: PgType) -> bool {
    let integer = dt.is_integer();
    match KeyKind::of(ty) {
        KeyKind::Int => integer,
        KeyKind::Float => integer || dt.is_floating(),
        KeyKind::Numeric => match (dt, ty) {
            (DataType::Decimal128(_, s), PgType::Numeric { scale, .. }) => *s <= scale,
            _ => false,
        },
        KeyKind::Text => matches!(
            dt,
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
        ),
        KeyKind::Bpchar => false,
        KeyKind::Date => *dt == DataType::Date32,
        KeyKind::Timestamp => matches!(
            dt,
            DataType::Timestamp(datafusion::arrow::datatypes::TimeUnit::Microsecond, _)
        ),
        KeyKind::Bool => *dt == DataType::Boolean,
    }
}

/// A value of the statistics as a heap value (what the B-tree takes as a bound).
pub fn datum_of(v: &StatValue) -> Datum<'_> {
    match v {
        StatValue::Bool(b) => Datum::Bool(*b),
        StatValue::Int(i) => Datum::Int8(*i),
        StatValue::Float(f) => Datum::Float8(*f),
        StatValue::Numeric(n) => Datum::Numeric(*n),
        StatValue::Text(s) => Datum::Text(s),
        StatValue::Date(d) => Datum::Date(*d),
        StatValue::Timestamp(t) => Datum::Timestamp(*t),
    }
}

/// The keys of an index a condition selects.
#[derive(Clone, Debug, PartialEq)]
pub enum KeySet {
    Range {
        lower: Bound<StatValue>,
        upper: Bound<StatValue>,
    },
    Nulls,
    /// Every key, NULLs last: a scan for the index's order alone (`ORDER BY` its column).
    All,
    /// `op value` for a value computed before the scan starts ([`ParamClause`]).
    Param {
        op: CompareOp,
        value: Arc<dyn PhysicalExpr>,
    },
    /// Keys equal to one of the values, ascending, without NULL: `col IN (…)`,
    /// PostgreSQL's `col = ANY (array)` (first column only).
    AnyOf(Vec<StatValue>),
}

impl KeySet {
    /// The keys `op value` selects, for keys of kind `kind`.
    fn of(op: CompareOp, value: StatValue, kind: KeyKind) -> KeySet {
        let float_zero = kind == KeyKind::Float && matches!(value, StatValue::Float(f) if f == 0.0);
        let exclusive = |v: StatValue| {
            if float_zero {
                Bound::Included(v)
            } else {
                Bound::Excluded(v)
            }
        };
        let (lower, upper) = match op {
            CompareOp::Eq => (Bound::Included(value.clone()), Bound::Included(value)),
            CompareOp::Lt => (Bound::Unbounded, exclusive(value)),
            CompareOp::Le => (Bound::Unbounded, Bound::Included(value)),
            CompareOp::Gt => (exclusive(value), Bound::Unbounded),
            CompareOp::Ge => (Bound::Included(value), Bound::Unbounded),
            CompareOp::Ne => unreachable!("<> selects no range"),
        };
        KeySet::Range { lower, upper }
    }

    /// Whether the keys include the (non-NULL) value `v`.
    fn holds(&self, v: &StatValue) -> bool {
        match self {
            KeySet::Range { lower, upper } => {
                let above = match lower {
                    Bound::Included(l) => v >= l,
                    Bound::Excluded(l) => v > l,
                    Bound::Unbounded => true,
                };
                let below = match upper {
                    Bound::Included(u) => v <= u,
                    Bound::Excluded(u) => v < u,
                    Bound::Unbounded => true,
                };
                above && below
            }
            KeySet::AnyOf(values) => values.binary_search(v).is_ok(),
            KeySet::All => true,
            KeySet::Nulls | KeySet::Param { .. } => false,
        }
    }

    /// The keys both ranges select.
    fn intersect(self, other: KeySet) -> KeySet {
        match (self, other) {
            (
                KeySet::Range { lower, upper },
                KeySet::Range {
                    lower: l2,
                    upper: u2,
                },
            ) => KeySet::Range {
                lower: tighter(lower, l2, true),
                upper: tighter(upper, u2, false),
            },
            (KeySet::All, other) => other,
            (KeySet::AnyOf(values), other) | (other, KeySet::AnyOf(values)) => {
                KeySet::AnyOf(values.into_iter().filter(|v| other.holds(v)).collect())
            }
            (nulls, _) => nulls,
        }
    }
}

/// The more restrictive of two lower (`lower`) or upper bounds.
fn tighter(a: Bound<StatValue>, b: Bound<StatValue>, lower: bool) -> Bound<StatValue> {
    use std::cmp::Ordering::*;
    let value = |x: &Bound<StatValue>| match x {
        Bound::Included(v) | Bound::Excluded(v) => Some(v.clone()),
        Bound::Unbounded => None,
    };
    match (value(&a), value(&b)) {
        (None, _) => b,
        (_, None) => a,
        (Some(x), Some(y)) => match (x.cmp(&y), lower) {
            (Greater, true) | (Less, false) => a,
            (Less, true) | (Greater, false) => b,
            // Equal values: an exclusive bound is the tighter.
            (Equal, _) => match a {
                Bound::Excluded(_) => a,
                _ => b,
            },
        },
    }
}

/// Conditions one index answers for a query (see the module comment).
#[derive(Clone, Debug)]
pub struct IndexCond {
    pub index: IndexDef,
    /// The indexed table column, 0-based.
    pub column: usize,
    pub kind: KeyKind,
    pub keys: KeySet,
    /// The keys of later key columns that clauses select: (position in the index, kind,
    /// keys, never `All` or `Param`), in index order.
    pub later: Vec<(usize, KeyKind, KeySet)>,
    /// The conjuncts the keys come from: EXPLAIN's `Index Cond:`; the first
    /// `first_quals` are the first column's.
    pub quals: Vec<Arc<dyn PhysicalExpr>>,
    pub first_quals: usize,
}

/// Whether the planner can use `index` at all: its first column's operator class orders
/// keys as DataFusion's comparisons do.
pub fn usable_index(index: &IndexDef) -> bool {
    KeyKind::of(index.key_types[0]) != KeyKind::Bpchar
}

/// The keys the simple clauses on table column `column` (keys of kind `kind`) select among
/// `conjuncts`, and those clauses; `None` when there are none.
fn column_keys(
    column: usize,
    kind: KeyKind,
    columns: &[ColumnDef],
    conjuncts: &[Arc<dyn PhysicalExpr>],
    lists: bool,
) -> Option<(KeySet, Vec<Arc<dyn PhysicalExpr>>)> {
    let mut keys: Option<KeySet> = None;
    let mut quals = Vec::new();
    for qual in conjuncts {
        if let Some(values) = lists
            .then(|| {
                in_list_clause(qual, column, columns)
                    .or_else(|| or_of_equalities(qual, column, columns))
            })
            .flatten()
        {
            let these = KeySet::AnyOf(values);
            keys = Some(match keys {
                None => these,
                Some(k) => k.intersect(these),
            });
            quals.push(qual.clone());
            continue;
        }
        let Some(clause) = simple_clause(qual, columns).filter(|c| c.column == column) else {
            continue;
        };
        let these = match clause.test {
            ClauseTest::IsNull => {
                // IS NULL alone: any range beside it stays in the filter.
                return Some((KeySet::Nulls, vec![qual.clone()]));
            }
            ClauseTest::Compare(CompareOp::Ne, _) => continue,
            // Every key but NULL: a range with no bounds (NULLs are never in one).
            ClauseTest::IsNotNull => KeySet::Range {
                lower: Bound::Unbounded,
                upper: Bound::Unbounded,
            },
            ClauseTest::Compare(op, value) => KeySet::of(op, value, kind),
        };
        keys = Some(match keys {
            None => these,
            Some(k) => k.intersect(these),
        });
        quals.push(qual.clone());
    }
    keys.map(|k| (k, quals))
}

impl KeySet {
    /// What the B-tree scan wants of the column (a parameter resolved already).
    fn column_keys(&self) -> ColumnKeys<'_> {
        match self {
            KeySet::Range { lower, upper } => {
                ColumnKeys::Range(lower.as_ref().map(datum_of), upper.as_ref().map(datum_of))
            }
            KeySet::Nulls => ColumnKeys::Null,
            KeySet::All => ColumnKeys::Any,
            KeySet::AnyOf(values) => ColumnKeys::AnyOf(values.iter().map(datum_of).collect()),
            KeySet::Param { .. } => unreachable!("resolved by keys_now"),
        }
    }
}

impl IndexCond {
    /// The condition `index` answers among `conjuncts`, if any.
    pub fn find(
        index: &IndexDef,
        columns: &[ColumnDef],
        conjuncts: &[Arc<dyn PhysicalExpr>],
    ) -> Option<IndexCond> {
        if !usable_index(index) {
            return None;
        }
        let column = index.columns[0];
        let kind = KeyKind::of(index.key_types[0]);
        let param = |outer: bool| {
            conjuncts.iter().find_map(|qual| {
                let p = param_clause(qual, columns).filter(|p| {
                    p.column == column && (p.value.downcast_ref::<OuterParam>().is_some() == outer)
                })?;
                let keys = KeySet::Param {
                    op: p.op,
                    value: p.value,
                };
                Some((keys, vec![qual.clone()]))
            })
        };
        // A nested loop's outer value first: the scan is planned for it, and other clauses
        // on the column are left to the filter. No clause on the first column: every key
        // of it, for a skip scan if a later column has clauses.
        let (keys, mut quals) = param(true)
            .or_else(|| column_keys(column, kind, columns, conjuncts, true))
            .or_else(|| param(false))
            .unwrap_or((KeySet::All, Vec::new()));
        let first_quals = quals.len();
        let mut later = Vec::new();
        for (at, (&c, &ty)) in index
            .columns
            .iter()
            .zip(&index.key_types)
            .enumerate()
            .skip(1)
        {
            // A column repeated in the index has its clauses at its first place.
            if index.columns[..at].contains(&c) {
                continue;
            }
            let kind = KeyKind::of(ty);
            // A list of keys is scanned on the first column only: on the others it stays
            // in the filter.
            if let Some((keys, these)) = column_keys(c, kind, columns, conjuncts, false) {
                later.push((at, kind, keys));
                quals.extend(these);
            }
        }
        if quals.is_empty() {
            return None;
        }
        Some(IndexCond {
            index: index.clone(),
            column,
            kind,
            keys,
            later,
            quals,
            first_quals,
        })
    }

    /// The keys to read now: a parameter's value taken (the scan is starting, so the
    /// subquery has run; a generic plan's `$n` is one of `params`); `None` when its
    /// value, NULL, selects no key.
    fn keys_now(&self, params: &[ScalarValue]) -> Option<KeySet> {
        let KeySet::Param { op, value } = &self.keys else {
            return Some(self.keys.clone());
        };
        let every_key = KeySet::Range {
            lower: Bound::Unbounded,
            upper: Bound::Unbounded,
        };
        let one_row_of_no_columns = RecordBatch::try_new_with_options(
            Arc::new(Schema::empty()),
            vec![],
            &RecordBatchOptions::new().with_row_count(Some(1)),
        );
        let value = one_row_of_no_columns
            .map_err(Into::into)
            .and_then(|batch| bind_markers(value, params)?.evaluate(&batch))
            .and_then(|v| match v {
                ColumnarValue::Scalar(v) => Ok(v),
                ColumnarValue::Array(a) => ScalarValue::try_from_array(&a, 0),
            });
        // A value that fails (an overflow in `(SELECT …) + 1`) or does not compare as the
        // keys do: every key but NULL, and the filter above decides (and reports the error
        // as it would without the index).
        let Ok(v) = value else {
            return Some(every_key);
        };
        if v.is_null() {
            return None;
        }
        Some(match comparable_value(&v, self.index.key_types[0]) {
            Some(v) => KeySet::of(*op, v, self.kind),
            None => every_key,
        })
    }

    /// Whether the condition's first column takes a nested loop's outer value
    /// ([`OuterParam`]).
    pub fn takes_outer_value(&self) -> bool {
        matches!(&self.keys, KeySet::Param { value, .. } if value.downcast_ref::<OuterParam>().is_some())
    }

    /// Every entry of `index`, in its order: no condition, for an `ORDER BY` of its column.
    pub fn all(index: &IndexDef) -> Option<IndexCond> {
        usable_index(index).then(|| IndexCond {
            index: index.clone(),
            column: index.columns[0],
            kind: KeyKind::of(index.key_types[0]),
            keys: KeySet::All,
            later: Vec::new(),
            quals: Vec::new(),
            first_quals: 0,
        })
    }

    /// Whether a forward scan of this condition skips through the first column's values:
    /// the second column has clauses the first's do not let bound the scan
    /// (`btree::scan`, "Skip scans").
    pub fn skips(&self) -> bool {
        self.later.first().is_some_and(|(at, _, _)| *at == 1)
            && !self.pins(0)
            && !matches!(self.keys, KeySet::AnyOf(_))
    }

    /// The descents a scan of a list of keys makes: one per value (PostgreSQL's
    /// `num_sa_scans`); `None` for other conditions.
    pub fn list_searches(&self) -> Option<usize> {
        match &self.keys {
            KeySet::AnyOf(values) => Some(values.len()),
            _ => None,
        }
    }

    /// The first column's clauses.
    pub fn first_column_quals(&self) -> Vec<Arc<dyn PhysicalExpr>> {
        self.quals[..self.first_quals].to_vec()
    }

    /// Whether the condition holds key column `at` (position in the index) to one value:
    /// `=` a constant (not IS NULL, which PostgreSQL's pathkeys do not take as one value).
    pub fn pins(&self, at: usize) -> bool {
        let keys = match at {
            0 => &self.keys,
            _ => match self.later.iter().find(|(a, _, _)| *a == at) {
                Some((_, _, keys)) => keys,
                None => return false,
            },
        };
        match keys {
            KeySet::Range {
                lower: Bound::Included(l),
                upper: Bound::Included(u),
            } => l == u,
            _ => false,
        }
    }

    /// How many of `order`'s columns, from the first, a scan of this condition returns its
    /// rows in (0: not even the first). The index's order is its columns' (read backward
    /// for a descending order); a key column held to one value by the condition may be
    /// passed over in the index and in the order alike, as PostgreSQL's pathkeys drop
    /// such columns: an index on `(a, b)` gives `ORDER BY b` where `a = 5`, and
    /// `ORDER BY a, b`.
    pub fn order_columns_given(&self, order: &ScanOrder) -> usize {
        if matches!(self.keys, KeySet::AnyOf(_)) && order.descending {
            return 0; // a list's values are scanned ascending only
        }
        let columns = &self.index.columns;
        let pinned_column =
            |c: usize| (0..columns.len()).any(|at| columns[at] == c && self.pins(at));
        let mut at = 0;
        let mut given = 0;
        for &column in &order.columns {
            while at < columns.len() && columns[at] != column && self.pins(at) {
                at += 1;
            }
            if at < columns.len() && columns[at] == column {
                at += 1;
            } else if !pinned_column(column) {
                break;
            }
            given += 1;
        }
        given
    }

    /// A scan of `index` (this condition's index) for the condition's keys, a generic
    /// plan's parameters given `params` (the statement's values).
    pub fn scan<'a>(
        &self,
        index: &BtreeIndex,
        params: &[ScalarValue],
        acct: &'a mut IoAccount,
    ) -> PgResult<BtreeScan<'a>> {
        self.scan_in_order(index, false, params, acct)
    }

    /// [`scan`](Self::scan) in descending order (`ORDER BY … DESC`: NULLs first).
    pub fn scan_backward<'a>(
        &self,
        index: &BtreeIndex,
        params: &[ScalarValue],
        acct: &'a mut IoAccount,
    ) -> PgResult<BtreeScan<'a>> {
        self.scan_in_order(index, true, params, acct)
    }

    fn scan_in_order<'a>(
        &self,
        index: &BtreeIndex,
        backward: bool,
        params: &[ScalarValue],
        acct: &'a mut IoAccount,
    ) -> PgResult<BtreeScan<'a>> {
        let Some(first) = self.keys_now(params) else {
            return index.scan_range(Bound::Included(Datum::Null), Bound::Unbounded, acct);
        };
        self.scan_keys(index, &first, backward, acct)
    }

    /// A scan for the condition with its outer parameter bound to `value`, a nested loop's
    /// outer row's key (`plan::nested_loops`); `None` when the value is NULL, which equals
    /// no key.
    pub fn scan_for<'a>(
        &self,
        index: &BtreeIndex,
        value: &ScalarValue,
        acct: &'a mut IoAccount,
    ) -> PgResult<Option<BtreeScan<'a>>> {
        match self.outer_keys(value)? {
            Some(first) => index.scan(&self.keys_with(&first), false, acct).map(Some),
            None => Ok(None),
        }
    }

    /// The first column's keys for the outer value `value` (the condition takes one);
    /// `None` when the value is NULL, which equals no key.
    pub fn outer_keys(&self, value: &ScalarValue) -> PgResult<Option<KeySet>> {
        let KeySet::Param { op, value: param } = &self.keys else {
            return Err(PgError::internal(
                "an index scan for an outer value without one",
            ));
        };
        debug_assert!(param.downcast_ref::<OuterParam>().is_some());
        if value.is_null() {
            return Ok(None);
        }
        // The planner took the parameter only for a type whose values compare exactly.
        let v = comparable_value(value, self.index.key_types[0]).ok_or_else(|| {
            PgError::internal(format!(
                "outer value {value} does not compare with the index keys"
            ))
        })?;
        Ok(Some(KeySet::of(*op, v, self.kind)))
    }

    /// The block of the first leaf a scan for `first` (an outer value's keys) reads, not
    /// read yet (`BtreeIndex::first_leaf`).
    pub fn first_leaf_for(
        &self,
        index: &BtreeIndex,
        first: &KeySet,
        acct: &mut IoAccount,
    ) -> PgResult<Option<u32>> {
        index.first_leaf(&self.keys_with(first), acct)
    }

    /// The scan for `first` (an outer value's keys), starting at `leaf`, the block
    /// [`first_leaf_for`](Self::first_leaf_for) named, read since.
    pub fn scan_at_leaf<'a>(
        &self,
        index: &BtreeIndex,
        first: &KeySet,
        leaf: crate::buffer::PinnedBuffer,
        acct: &'a mut IoAccount,
    ) -> PgResult<BtreeScan<'a>> {
        index.scan_at_leaf(&self.keys_with(first), leaf, acct)
    }

    /// A scan for `first` on the first column and the condition's keys on the others.
    fn scan_keys<'a>(
        &self,
        index: &BtreeIndex,
        first: &KeySet,
        backward: bool,
        acct: &'a mut IoAccount,
    ) -> PgResult<BtreeScan<'a>> {
        index.scan(&self.keys_with(first), backward, acct)
    }

    /// The scan keys: `first` on the first column, the condition's on the others.
    fn keys_with<'k>(&'k self, first: &'k KeySet) -> Vec<ColumnKeys<'k>> {
        let width = self.later.last().map_or(1, |(at, _, _)| at + 1);
        let mut keys = vec![ColumnKeys::Any; width];
        keys[0] = first.column_keys();
        for (at, _, set) in &self.later {
            keys[*at] = set.column_keys();
        }
        keys
    }

    /// The test a Bitmap Heap Scan rechecks this condition's rows with.
    pub fn key_test(&self) -> KeyTest {
        let key = |kind: KeyKind, v: &StatValue| {
            Key::bound_for(kind, datum_of(v))
                .map(Key::into_owned)
                .expect("comparable_value admits only values the index compares with")
        };
        let bound = |kind: KeyKind, b: &Bound<StatValue>| match b {
            Bound::Included(v) => Bound::Included(key(kind, v)),
            Bound::Excluded(v) => Bound::Excluded(key(kind, v)),
            Bound::Unbounded => Bound::Unbounded,
        };
        let test = |column: usize, kind: KeyKind, keys: &KeySet| {
            let range = match keys {
                // A parameter's clause is left to the filter above.
                KeySet::All | KeySet::Param { .. } => return KeyTest::All(Vec::new()),
                KeySet::Nulls => None,
                KeySet::Range { lower, upper } => Some((bound(kind, lower), bound(kind, upper))),
                KeySet::AnyOf(values) => {
                    let one = |v: &StatValue| KeyTest::Keys {
                        column,
                        kind,
                        range: Some((Bound::Included(key(kind, v)), Bound::Included(key(kind, v)))),
                    };
                    return KeyTest::Any(values.iter().map(one).collect());
                }
            };
            KeyTest::Keys {
                column,
                kind,
                range,
            }
        };
        let first = test(self.column, self.kind, &self.keys);
        if self.later.is_empty() {
            return first;
        }
        let later =
            (self.later.iter()).map(|(at, kind, keys)| test(self.index.columns[*at], *kind, keys));
        KeyTest::All(std::iter::once(first).chain(later).collect())
    }
}

/// A test of a heap tuple by index keys: a Bitmap Heap Scan's recheck of lossy pages.
#[derive(Clone, Debug)]
pub enum KeyTest {
    /// Column `column`'s value lies in the range, or is NULL when `range` is `None`.
    Keys {
        column: usize,
        kind: KeyKind,
        range: Option<(Bound<Key<'static>>, Bound<Key<'static>>)>,
    },
    All(Vec<KeyTest>),
    Any(Vec<KeyTest>),
}

impl KeyTest {
    /// Whether the tuple passes.
    pub fn matches(&self, layout: &TupleLayout, tuple: &[u8]) -> PgResult<bool> {
        match self {
            KeyTest::Keys {
                column,
                kind,
                range,
            } => {
                let value = Key::from_datum(layout.datum(tuple, *column)?);
                let Some((lower, upper)) = range else {
                    return Ok(value.is_null());
                };
                if value.is_null() {
                    return Ok(false);
                }
                let cmp = |bound: &Key| key::compare(*kind, &value, bound);
                use std::cmp::Ordering::*;
                let above_lower = match lower {
                    Bound::Unbounded => true,
                    Bound::Included(k) => cmp(k) != Less,
                    Bound::Excluded(k) => cmp(k) == Greater,
                };
                let below_upper = match upper {
                    Bound::Unbounded => true,
                    Bound::Included(k) => cmp(k) != Greater,
                    Bound::Excluded(k) => cmp(k) == Less,
                };
                Ok(above_lower && below_upper)
            }
            KeyTest::All(tests) => {
                for t in tests {
                    if !t.matches(layout, tuple)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            KeyTest::Any(tests) => {
                for t in tests {
                    if t.matches(layout, tuple)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
        }
    }
}

/// The conjuncts of `e` (`a AND (b AND c)` is `[a, b, c]`).
pub fn conjuncts(e: &Arc<dyn PhysicalExpr>) -> Vec<Arc<dyn PhysicalExpr>> {
    flatten(e, Operator::And)
}

/// The arms of an OR (`a OR (b OR c)` is `[a, b, c]`); `None` when `e` is not an OR.
pub fn or_arms(e: &Arc<dyn PhysicalExpr>) -> Option<Vec<Arc<dyn PhysicalExpr>>> {
    let b = e.as_ref().downcast_ref::<BinaryExpr>()?;
    (*b.op() == Operator::Or).then(|| flatten(e, Operator::Or))
}

/// Whether `e` is a constant that is never true: `false` or a NULL (of any type).
pub fn never_true(e: &Arc<dyn PhysicalExpr>) -> bool {
    constant_of(e).is_some_and(|v| v.is_null() || v == ScalarValue::Boolean(Some(false)))
}

fn flatten(e: &Arc<dyn PhysicalExpr>, op: Operator) -> Vec<Arc<dyn PhysicalExpr>> {
    match e.as_ref().downcast_ref::<BinaryExpr>() {
        Some(b) if *b.op() == op => {
            let mut out = flatten(b.left(), op);
            out.extend(flatten(b.right(), op));
            out
        }
        _ => vec![e.clone()],
    }
}

/// The AND of `quals` as one expression (`None` for none).
pub fn conjunction(quals: &[Arc<dyn PhysicalExpr>]) -> Option<Arc<dyn PhysicalExpr>> {
    quals
        .iter()
        .cloned()
        .reduce(|acc, q| Arc::new(BinaryExpr::new(acc, Operator::And, q)) as Arc<dyn PhysicalExpr>)
}

#[cfg(test)]
mod tests {
    use datafusion::physical_expr::expressions::{Column, Literal};
    use iolab_catalog::Persistence;

    use super::*;

    fn columns() -> Vec<ColumnDef> {
        [
            ("i", PgType::Int4),
            ("s", PgType::Int2),
            ("f", PgType::Float8),
            (
                "n",
                PgType::Numeric {
                    precision: 10,
                    scale: 2,
                },
            ),
            ("c", PgType::Bpchar(4)),
        ]
        .into_iter()
        .map(|(name, ty)| ColumnDef {
            name: name.into(),
            ty,
            not_null: false,
        })
        .collect()
    }

    fn col(i: usize) -> Arc<dyn PhysicalExpr> {
        Arc::new(Column::new(&columns()[i].name, i))
    }

    fn lit(v: ScalarValue) -> Arc<dyn PhysicalExpr> {
        Arc::new(Literal::new(v))
    }

    fn bin(
        l: Arc<dyn PhysicalExpr>,
        op: Operator,
        r: Arc<dyn PhysicalExpr>,
    ) -> Arc<dyn PhysicalExpr> {
        Arc::new(BinaryExpr::new(l, op, r))
    }

    fn index_on(column: usize) -> IndexDef {
        IndexDef {
            oid: 10,
            schema: "public".into(),
            name: "x".into(),
            table_oid: 1,
            relfilenode: 10,
            columns: vec![column],
            key_types: vec![columns()[column].ty],
            unique: false,
            constraint: None,
            persistence: Persistence::Permanent,
            reloptions: Vec::new(),
            clustered: false,
        }
    }

    #[test]
    fn clauses_are_turned_round_and_casts_looked_through() {
        let cols = columns();
        // 5 > i is i < 5.
        let c = simple_clause(
            &bin(lit(ScalarValue::Int32(Some(5))), Operator::Gt, col(0)),
            &cols,
        );
        assert_eq!(
            c.unwrap().test,
            ClauseTest::Compare(CompareOp::Lt, StatValue::Int(5))
        );
        // CAST(s AS BIGINT) = CAST('7' AS BIGINT): a widened column, a cast constant.
        let widened: Arc<dyn PhysicalExpr> = Arc::new(CastExpr::new(col(1), DataType::Int64, None));
        let seven: Arc<dyn PhysicalExpr> = Arc::new(CastExpr::new(
            lit(ScalarValue::Utf8(Some("7".into()))),
            DataType::Int64,
            None,
        ));
        let c = simple_clause(&bin(widened, Operator::Eq, seven), &cols).unwrap();
        assert_eq!(
            (c.column, c.test),
            (1, ClauseTest::Compare(CompareOp::Eq, StatValue::Int(7)))
        );
        // A narrowing cast of the column is not the column.
        let narrowed: Arc<dyn PhysicalExpr> =
            Arc::new(CastExpr::new(col(0), DataType::Int16, None));
        assert!(simple_clause(
            &bin(narrowed, Operator::Eq, lit(ScalarValue::Int16(Some(1)))),
            &cols
        )
        .is_none());
        // A numeric constant finer than the column's scale does not compare as the keys do.
        let fine = bin(
            col(3),
            Operator::Lt,
            lit(ScalarValue::Decimal128(Some(1005), 10, 3)),
        );
        assert!(simple_clause(&fine, &cols).is_none());
        let exact = bin(
            col(3),
            Operator::Lt,
            lit(ScalarValue::Decimal128(Some(105), 10, 1)),
        );
        assert_eq!(
            simple_clause(&exact, &cols).unwrap().test,
            ClauseTest::Compare(CompareOp::Lt, StatValue::Numeric(1050))
        );
    }

    #[test]
    fn conditions_on_one_column_intersect() {
        let cols = columns();
        let i = |op, v| bin(col(0), op, lit(ScalarValue::Int32(Some(v))));
        let quals = vec![
            i(Operator::Gt, 5),
            i(Operator::GtEq, 5),
            i(Operator::LtEq, 8),
            i(Operator::Lt, 10),
            i(Operator::NotEq, 7),
        ];
        let cond = IndexCond::find(&index_on(0), &cols, &quals).unwrap();
        assert_eq!(
            cond.keys,
            KeySet::Range {
                lower: Bound::Excluded(StatValue::Int(5)),
                upper: Bound::Included(StatValue::Int(8)),
            }
        );
        assert_eq!(cond.quals.len(), 4, "<> is not an index condition");
        // No condition on the column: no IndexCond.
        assert!(IndexCond::find(&index_on(2), &cols, &quals).is_none());
        // char(n) indexes are never used (trailing blanks).
        let c = bin(
            col(4),
            Operator::Eq,
            lit(ScalarValue::Utf8(Some("ab".into()))),
        );
        assert!(IndexCond::find(&index_on(4), &cols, &[c]).is_none());
    }

    #[test]
    fn float_bounds_at_zero_include_both_zeros() {
        let cols = columns();
        let below_zero = bin(col(2), Operator::Lt, lit(ScalarValue::Float64(Some(0.0))));
        let cond = IndexCond::find(&index_on(2), &cols, &[below_zero]).unwrap();
        assert_eq!(
            cond.keys,
            KeySet::Range {
                lower: Bound::Unbounded,
                upper: Bound::Included(StatValue::Float(0.0)),
            }
        );
        let below_one = bin(col(2), Operator::Lt, lit(ScalarValue::Float64(Some(1.0))));
        let cond = IndexCond::find(&index_on(2), &cols, &[below_one]).unwrap();
        assert!(matches!(
            cond.keys,
            KeySet::Range {
                upper: Bound::Excluded(_),
                ..
            }
        ));
    }
}
