//! `HeapTable`: an iolab table as a DataFusion `TableProvider`.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
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

/// `Database` is not `Debug`; this wrapper lets `HeapTable` derive it.
pub struct DatabaseRef(pub Arc<Database>);

impl std::fmt::Debug for DatabaseRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Database({})", self.0.data_dir().display())
    }
}

impl HeapTable {
    pub fn new(db: Arc<Database>, def: TableDef) -> HeapTable {
        let schema = table_schema(&def);
        HeapTable { def, schema, db: Arc::new(DatabaseRef(db)) }
    }
}

/// The Arrow schema of a table's columns.
pub fn table_schema(def: &TableDef) -> SchemaRef {
    Arc::new(Schema::new(
        def.columns.iter().map(|c| Field::new(&c.name, c.ty.arrow_type(), !c.not_null)).collect::<Vec<_>>(),
    ))
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
            None => (0..self.def.columns.len()).collect(),
        };
        Ok(Arc::new(HeapScanExec::new(self.db.0.clone(), self.def.clone(), projection, limit)))
    }
}
