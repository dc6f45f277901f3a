//! Read streams: look-ahead reading of a relation's blocks (see `read_stream.rs`).

pub mod drop_behind;
pub mod read_stream;

pub use read_stream::{ReadStream, ReadStreamConfig, ReadStreamStats, StreamEvent};
