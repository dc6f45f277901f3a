//! The database engine: relation files, pages, buffer pool, heap, transactions, and the
//! DataFusion scan and insert operators over them.

pub mod accounting;
pub mod aio;
pub mod analyze;
pub mod bitmap;
pub mod btree;
pub mod buffer;
pub mod db;
pub mod exec;
pub mod heap;
pub mod plan;
pub mod storage;
pub mod stream;
pub mod temp;
pub mod txn;
pub mod values;
pub mod wal;

pub use db::{Database, DatabaseOptions};
