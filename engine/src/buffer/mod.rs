//! The shared buffer pool ([`pool`]), its frame memory ([`memory`]), buffer access
//! strategies ([`ring`]) and the background writer that keeps buffers ahead of the clock
//! sweep clean ([`bgwriter`]). See the comment at the top of `pool.rs` for how it works.

pub mod bgwriter;
pub mod memory;
pub mod pool;
pub mod prewarm;
pub mod ring;
pub mod writeback;

pub use pool::{
    preadv_fully, BufferId, BufferPool, BufferSnapshot, BufferTag, CleanedAhead, EvictCounts,
    PageReadGuard, PageWriteGuard, PendingRead, PinLoan, PinnedBuffer, PoolStats, ReadByOther,
    StartedRead, MAX_USAGE_COUNT,
};
pub use ring::{BufferRing, RingKind};
