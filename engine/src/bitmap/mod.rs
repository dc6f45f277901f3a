//! TID bitmaps: the set of tuple ids a Bitmap Index Scan finds, handed to the Bitmap Heap
//! Scan, which visits their pages in block order (see `tidbitmap.rs`).

pub mod page_table;
pub mod tidbitmap;

pub use tidbitmap::{TbmIterator, TbmOffsets, TbmPage, TidBitmap};
