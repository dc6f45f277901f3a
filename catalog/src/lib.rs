//! iolab's system catalog: tables, columns, types, file numbers and the vocabulary of
//! PostgreSQL (types, errors) every other crate speaks.

pub mod alter;
pub mod attributes;
pub mod error;
pub mod index;
pub mod types;

pub use error::{sqlstate, PgError, PgResult};
pub use types::PgType;
pub mod sequence;
pub mod sequence_catalog;
pub mod sequence_values;
pub mod statistics;
pub mod store;
pub mod view;

pub use index::{ConstraintKind, IndexConstraint, IndexDef};
pub use sequence::{OwnedBy, Position, SequenceDef, SequenceOptions};
pub use sequence_catalog::{ColumnDefault, ColumnSequence, DefaultValue, Identity};
pub use statistics::{ColumnStatistics, MostCommonValues, StatValue, TableStatistics};
pub use store::{Catalog, ColumnDef, DroppedTable, Persistence, TableDef};
pub use view::{ViewColumn, ViewDef};
