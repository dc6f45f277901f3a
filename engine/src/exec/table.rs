//! `HeapTable`: an iolab table as a DataFusion `TableProvider`.
//!
//! Every filter is accepted as an `Inexact` pushdown: DataFusion hands the WHERE clause's
//! conjuncts to [`HeapTable::scan`] and still keeps its own `FilterExec` with all of them
//! above the scan. `scan` turns the conjuncts into physical expressions over the table's
//! schema and lets the planner (`plan::paths`) choose Seq Scan, Index Scan or Bitmap Heap
//! Scan with the statement's settings; a conjunct that cannot be made physical (it reads
//! an outer query, say) is simply not used for planning.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{DFSchema, Result as DfResult};
use datafusion::datasource::TableType;
use datafusion::logical_expr::expr_rewriter::unnormalize_col;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::ExecutionPlan;
use iolab_catalog::TableDef;

use crate::exec::context::StatementContext;
use crate::exec::scan::{to_df, HeapScanExec};
use crate::plan::index_cond::conjuncts;
use crate::plan::paths::{plan_scan, Replan, ScanRequest};
use crate::plan::ScanOrder;
use crate::Database;

#[derive(Clone, Debug)]
pub struct HeapTable {
    pub def: TableDef,
    schema: SchemaRef,
    db: Arc<DatabaseRef>,
    /// The order the query wants the rows in, when `plan::ordered_scans` found one.
    order: Option<ScanOrder>,
}

/// The name of the system column that gives a tuple's location.
pub const CTID: &str = "ctid";

/// `Database` is not `Debug`; this wrapper lets `HeapTable` derive it.
pub struct DatabaseRef(pub Arc<Database>);

impl std::fmt::Debug for DatabaseRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Database({})", self.0.data_dir().display())
    }
}

impl HeapTable {
    /// A table as DataFusion sees it; with `with_ctid` its schema ends with the `ctid`
    /// system column (DataFusion has no hidden columns, so it is only added for
    /// statements that name it).
    pub fn new(db: Arc<Database>, def: TableDef, with_ctid: bool) -> HeapTable {
        let schema = table_schema(&def, with_ctid);
        HeapTable {
            def,
            schema,
            db: Arc::new(DatabaseRef(db)),
            order: None,
        }
    }

    /// The table, its scan told that the query sorts its rows in `order`.
    pub fn with_order(&self, order: ScanOrder) -> HeapTable {
        HeapTable {
            order: Some(order),
            ..self.clone()
        }
    }

    pub fn order(&self) -> Option<&ScanOrder> {
        self.order.as_ref()
    }

    /// Has the table a B-tree index the planner can use on column `column`?
    pub fn index_on(&self, column: usize) -> bool {
        (self.db.0.catalog.indexes_of(self.def.oid))
            .iter()
            .any(|i| crate::plan::index_cond::usable_index(i) && i.columns[0] == column)
    }
}

/// The Arrow schema of a table's columns (and `ctid`, after them).
pub fn table_schema(def: &TableDef, with_ctid: bool) -> SchemaRef {
    let mut fields: Vec<Field> = def
        .columns
        .iter()
        .map(|c| Field::new(&c.name, c.ty.arrow_type(), !c.not_null))
        .collect();
    if with_ctid && def.column_index(CTID).is_none() {
        fields.push(Field::new(CTID, DataType::Utf8, false));
    }
    Arc::new(Schema::new(fields))
}

#[async_trait]
impl TableProvider for HeapTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let projection: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..self.schema.fields().len()).collect(),
        };
        let Ok(stmt) = StatementContext::from_config(state.config()) else {
            // Planned outside a statement (nothing runs it with iolab's settings): read it all.
            return Ok(Arc::new(HeapScanExec::new(
                self.db.0.clone(),
                self.def.clone(),
                self.schema.clone(),
                projection,
                limit,
            )));
        };
        let df_schema = DFSchema::try_from(self.schema.as_ref().clone())?;
        let mut quals: Vec<Arc<dyn PhysicalExpr>> = Vec::new();
        for filter in filters {
            if let Ok(qual) =
                state.create_physical_expr(unnormalize_col(filter.clone()), &df_schema)
            {
                quals.extend(conjuncts(&qual));
            }
        }
        // A condition on a value computed before the scan (an InitPlan's) reaches the scan
        // only after physical planning (`plan::param_scans`), which plans it again then.
        let replan = {
            let (db, def, schema) = (self.db.0.clone(), self.def.clone(), self.schema.clone());
            let (projection, quals, order, stmt) = (
                projection.clone(),
                quals.clone(),
                self.order.clone(),
                stmt.clone(),
            );
            Replan::new(
                stmt.planner,
                move |more: Vec<Arc<dyn PhysicalExpr>>, loops| {
                    let request = ScanRequest {
                        db: &db,
                        table: &def,
                        table_schema: schema.clone(),
                        projection: projection.clone(),
                        // A generic plan's scan has its parameters' conjuncts already.
                        quals: (quals.iter().cloned())
                            .chain(more.into_iter().filter(|m| !quals.contains(m)))
                            .collect(),
                        limit,
                        order: order.clone(),
                        replan: None,
                        loops,
                    };
                    plan_scan(&stmt, request)
                },
            )
        };
        let request = ScanRequest {
            db: &self.db.0,
            table: &self.def,
            table_schema: self.schema.clone(),
            projection,
            quals,
            limit,
            order: self.order.clone(),
            replan: Some(replan),
            loops: 1.0,
        };
        plan_scan(&stmt, request).map_err(to_df)
    }
}
