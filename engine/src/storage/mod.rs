//! On-disk storage: the 8 KiB page format ([`page`]), relation files split into 1 GiB
//! segments ([`relfile`]) and the data directory's lock ([`datadir_lock`]). Nothing here
//! caches pages; the buffer pool (`crate::buffer`) sits on top and is the only component
//! that decides when a page is read or written.
//!
//! The byte-level format is documented in `docs/storage-format.md`.

pub mod datadir_lock;
pub mod page;
pub mod relfile;

pub use page::{
    page_add_item, page_checksum, page_free_space, page_header_is_valid, page_init, page_is_new,
    page_item, page_item_flags, page_item_id, page_item_mut, page_max_offset, page_set_checksum,
    page_verify, AlignedBlock, ItemId, LpFlags, PageCorruption, PageHeader, BLCKSZ, IO_ALIGN_SIZE,
};
pub use relfile::{RelFile, RelFileOptions, RELSEG_SIZE};
