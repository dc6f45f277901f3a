//! DataFusion operators over iolab's heap: the table provider, the sequential scan, the
//! index scan and the bitmap scan nodes.

pub mod bitmap_scan;
pub mod cancel;
pub mod context;
pub mod hash_join_batches;
pub mod index_scan;
pub mod nested_loop;
pub mod operator_usage;
pub mod scan;
pub mod schema;
pub mod table;
pub mod temp_files;
pub mod work_mem;

pub use context::StatementContext;
pub use table::HeapTable;
