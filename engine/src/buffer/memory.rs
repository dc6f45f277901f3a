//! The memory behind the buffer pool's frames: one contiguous anonymous mapping of
//! `nframes × BLCKSZ` bytes. `mmap` returns page-aligned (4096-byte) memory, which is what
//! `O_DIRECT` will need; a later change can add `MAP_HUGETLB` (2 MiB pages) here without
//! touching the pool. Every 4 KiB page of the mapping is written once at creation so that the
//! page faults happen now and not during the first scan.
//!
//! This module only hands out raw pointers; who may touch which frame is the pool's business
//! (see the locking rules in `pool.rs`).

use std::ptr::NonNull;

use crate::storage::page::BLCKSZ;

/// Alignment guaranteed for every frame.
pub const FRAME_ALIGN: usize = 4096;

/// `nframes` page-sized, 4096-byte-aligned frames in one mapping.
pub struct FrameMemory {
    base: NonNull<u8>,
    nframes: usize,
}

// SAFETY: FrameMemory is a plain block of bytes; synchronising access to individual frames is
// the pool's responsibility.
unsafe impl Send for FrameMemory {}
unsafe impl Sync for FrameMemory {}

impl FrameMemory {
    /// Map and pre-fault `nframes` frames. Panics if the kernel refuses the mapping (the pool
    /// is sized at start-up, where failing loudly is right).
    pub fn new(nframes: usize) -> FrameMemory {
        assert!(nframes > 0, "a buffer pool needs at least one frame");
        let len = nframes
            .checked_mul(BLCKSZ)
            .expect("buffer pool size overflows usize");
        // SAFETY: an anonymous private mapping with no address hint has no preconditions.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            panic!(
                "could not map {len} bytes for {nframes} shared buffers: {}",
                std::io::Error::last_os_error()
            );
        }
        let base = NonNull::new(ptr as *mut u8).expect("mmap returned a null mapping");
        assert_eq!(
            base.as_ptr() as usize % FRAME_ALIGN,
            0,
            "mmap memory must be page aligned"
        );
        // Pre-fault: write to every 4 KiB page (volatile so the stores are not elided; the
        // mapping is already zero, so the values do not change).
        for offset in (0..len).step_by(FRAME_ALIGN) {
            // SAFETY: offset < len, inside the mapping.
            unsafe { std::ptr::write_volatile(base.as_ptr().add(offset), 0) };
        }
        FrameMemory { base, nframes }
    }

    pub fn nframes(&self) -> usize {
        self.nframes
    }

    /// Pointer to the first byte of frame `index`; the frame is `BLCKSZ` bytes long.
    #[inline]
    pub fn frame_ptr(&self, index: usize) -> *mut u8 {
        assert!(
            index < self.nframes,
            "frame {index} out of range ({} frames)",
            self.nframes
        );
        // SAFETY: index < nframes, so the offset stays inside the mapping.
        unsafe { self.base.as_ptr().add(index * BLCKSZ) }
    }
}

impl Drop for FrameMemory {
    fn drop(&mut self) {
        // SAFETY: base/len describe exactly the mapping created in `new`, and no frame
        // reference outlives the pool that owns this memory.
        unsafe {
            libc::munmap(
                self.base.as_ptr() as *mut libc::c_void,
                self.nframes * BLCKSZ,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_aligned_zeroed_and_disjoint() {
        let mem = FrameMemory::new(3);
        for i in 0..3 {
            let p = mem.frame_ptr(i);
            assert_eq!(p as usize % FRAME_ALIGN, 0);
            let frame = unsafe { std::slice::from_raw_parts_mut(p, BLCKSZ) };
            assert!(frame.iter().all(|&b| b == 0));
            frame.fill(i as u8 + 1);
        }
        for i in 0..3 {
            let frame = unsafe { std::slice::from_raw_parts(mem.frame_ptr(i), BLCKSZ) };
            assert!(frame.iter().all(|&b| b == i as u8 + 1));
        }
    }
}
