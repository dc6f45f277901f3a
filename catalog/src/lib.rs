//! iolab's system catalog: tables, columns, types, file numbers and the vocabulary of
//! PostgreSQL (types, errors) every other crate speaks.

pub mod error;
pub mod index;
pub mod types;

pub use error::{sqlstate, PgError, PgResult};
pub use types::PgType;
pub mod statistics;
pub mod store;

pub use index::IndexDef;
pub use statistics::{ColumnStatistics, MostCommonValues, StatValue, TableStatistics};
pub use store::{Catalog, ColumnDef, DroppedTable, Persistence, TableDef};
