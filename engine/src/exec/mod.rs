//! DataFusion operators over iolab's heap: the table provider and the sequential scan.

pub mod context;
pub mod scan;
pub mod schema;
pub mod table;

pub use context::StatementContext;
pub use table::HeapTable;
