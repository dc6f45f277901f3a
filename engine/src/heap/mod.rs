//! Heap tables: rows stored as PostgreSQL-style heap tuples on 8 KiB pages.
//!
//! `tuple` is the tuple header (visibility fields, null bitmap, size limit); `codec` turns
//! Arrow rows into tuple bytes and tuple bytes back into Arrow record batches; `rows`
//! collects the tuples a scan keeps (and their `ctid`) into its output batches, for the
//! Seq Scan (`heapam`), the Bitmap Heap Scan (`bitmap_heap`) and the Index Scan.

pub mod bitmap_heap;
pub mod codec;
pub mod delete;
pub mod fetch;
pub mod fsm;
pub mod heapam;
pub mod liveness;
pub mod prune;
pub mod rewrite;
pub mod rows;
pub mod tuple;
pub mod visibility_map;
