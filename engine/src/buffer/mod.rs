//! The shared buffer pool ([`pool`]), its frame memory ([`memory`]) and buffer access
//! strategies ([`ring`]). See the comment at the top of `pool.rs` for how it works.

pub mod memory;
pub mod pool;
pub mod prewarm;
pub mod ring;

pub use pool::{
    preadv_fully, BufferId, BufferPool, BufferSnapshot, BufferTag, EvictCounts, PageReadGuard,
    PageWriteGuard, PendingRead, PinnedBuffer, PoolStats, ReadByOther, StartedRead,
    MAX_USAGE_COUNT,
};
pub use ring::{BufferRing, RingKind};
