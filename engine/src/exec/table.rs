//! `HeapTable`: an iolab table as a DataFusion `TableProvider`.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::Result as DfResult;
use datafusion::datasource::TableType;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;
use iolab_catalog::TableDef;

use crate::exec::scan::HeapScanExec;
use crate::Database;

#[derive(Debug)]
pub struct HeapTable {
    pub def: TableDef,
    schema: SchemaRef,
    db: Arc<DatabaseRef>,
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
        }
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

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let projection: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..self.schema.fields().len()).collect(),
        };
        Ok(Arc::new(HeapScanExec::new(
            self.db.0.clone(),
            self.def.clone(),
            self.schema.clone(),
            projection,
            limit,
        )))
    }
}
