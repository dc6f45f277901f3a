//! `pg_prewarm`: warming blocks `first ..= last` of a relation's main fork before an
//! experiment, in one of PostgreSQL's three modes.
//!
//! | mode | what happens | counted in `pg_stat_io` |
//! |---|---|---|
//! | `buffer` | read into the buffer pool through a sequential read stream (combined reads, look-ahead, advice as the session's settings say) without a ring, so the blocks stay, as PostgreSQL 17 and later do | as reads (`normal` context) |
//! | `read` | read one block at a time with `pread` into one scratch block: the kernel's page cache keeps them | no (PostgreSQL's `smgrread` is not counted either) |
//! | `prefetch` | `posix_fadvise(WILLNEED)` over the range, one call per segment file: the kernel reads ahead on its own | no |
//!
//! The number of blocks is the result in every mode. Under direct I/O the kernel keeps
//! no copy: `read` and `prefetch` then warm nothing that a later read would find (in
//! PostgreSQL too). Each mode looks at the statement's cancel flag between blocks
//! (every segment for `prefetch`).

use std::ops::RangeInclusive;
use std::sync::Arc;

use iolab_catalog::{PgError, PgResult};

use crate::accounting::IoAccount;
use crate::aio::AioSystem;
use crate::buffer::BufferPool;
use crate::storage::page::BLCKSZ;
use crate::storage::relfile::RelFile;
use crate::stream::{ReadStream, ReadStreamConfig};

/// How `pg_prewarm` warms blocks (see the module comment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrewarmMode {
    Prefetch,
    Read,
    Buffer,
}

impl PrewarmMode {
    /// PostgreSQL's names: `prefetch`, `read`, `buffer`.
    pub fn parse(name: &str) -> Option<PrewarmMode> {
        match name {
            "prefetch" => Some(PrewarmMode::Prefetch),
            "read" => Some(PrewarmMode::Read),
            "buffer" => Some(PrewarmMode::Buffer),
            _ => None,
        }
    }
}

/// What a prewarm needs of the server.
pub struct Prewarm<'a> {
    pub aio: &'a Arc<AioSystem>,
    pub pool: &'a Arc<BufferPool>,
    /// The read stream of `buffer` mode (sequential).
    pub config: &'a ReadStreamConfig,
    pub check_cancel: &'a dyn Fn() -> PgResult<()>,
}

impl Prewarm<'_> {
    /// Warms `blocks` of `rel` as `mode` says; how many blocks that was. `acct` takes the
    /// `buffer` mode's reads.
    pub fn run(
        &self,
        rel: &Arc<RelFile>,
        mode: PrewarmMode,
        blocks: RangeInclusive<u32>,
        acct: &mut IoAccount,
    ) -> PgResult<u64> {
        if blocks.is_empty() {
            return Ok(0);
        }
        assert!(*blocks.end() < rel.nblocks(), "blocks of the relation");
        let count = u64::from(blocks.end() - blocks.start()) + 1;
        match mode {
            PrewarmMode::Prefetch => self.prefetch(rel, blocks)?,
            PrewarmMode::Read => self.read(rel, blocks)?,
            PrewarmMode::Buffer => self.buffer(rel, blocks, acct)?,
        }
        Ok(count)
    }

    fn prefetch(&self, rel: &RelFile, blocks: RangeInclusive<u32>) -> PgResult<()> {
        let per_segment = rel.segment_blocks();
        let mut next = *blocks.start();
        while next <= *blocks.end() {
            (self.check_cancel)()?;
            let segment_end = (next / per_segment + 1) * per_segment - 1;
            let last = segment_end.min(*blocks.end());
            let (fd, offset) = rel.raw_fd_and_offset(next).map_err(|e| io_error(rel, &e))?;
            let len = (last - next + 1) as usize * BLCKSZ;
            crate::aio::advise_willneed(fd, offset, len);
            next = last + 1;
        }
        Ok(())
    }

    fn read(&self, rel: &RelFile, blocks: RangeInclusive<u32>) -> PgResult<()> {
        let mut block = Box::new(crate::storage::page::AlignedBlock::zeroed());
        for blkno in blocks {
            (self.check_cancel)()?;
            (rel.read_block(blkno, &mut block.0)).map_err(|e| io_error(rel, &e))?;
        }
        Ok(())
    }

    fn buffer(
        &self,
        rel: &Arc<RelFile>,
        blocks: RangeInclusive<u32>,
        acct: &mut IoAccount,
    ) -> PgResult<()> {
        let mut source = blocks.map(|b| (b, ()));
        let mut stream = ReadStream::new(
            self.aio.clone(),
            self.pool.clone(),
            rel.clone(),
            None,
            self.config,
            std::mem::take(acct),
            move || source.next(),
        );
        let result = loop {
            if let Err(e) = (self.check_cancel)() {
                break Err(e);
            }
            match stream.next_buffer() {
                Ok(Some(_)) => {}
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        *acct = stream.into_account();
        result
    }
}

fn io_error(rel: &RelFile, e: &std::io::Error) -> PgError {
    PgError::io(
        &format!("could not read file \"{}\"", rel.path().display()),
        e,
    )
}
