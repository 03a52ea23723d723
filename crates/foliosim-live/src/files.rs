//! The scenario's `[[file]]`s as real files: filled with random bytes (so no filesystem or
//! compression shortcut applies), fsynced, and dropped from the page cache so they start
//! uncached, as mmtests creates thpscale's work file before `drop_caches`.

use anyhow::{Context, Result};
use std::io::Write;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// Where file `id` lives in the run's file directory (a `[[file]]` index, or a CreateFile id).
pub fn path(dir: &Path, id: u32) -> PathBuf {
    dir.join(format!("file{id}"))
}

/// Create `path` (new, never an existing file or symlink) with `bytes` of random data, written back and evicted from the page cache.
pub fn create(path: &Path, bytes: u64, seed: u64) -> Result<()> {
    // Never through a symlink and never over an existing file (O_EXCL | O_NOFOLLOW).
    let mut f = crate::swapdev::create_exclusive(path).with_context(|| {
        format!(
            "creating {} (refused: it must not exist yet)",
            path.display()
        )
    })?;
    // xorshift64*: cheap, and data no compressor or dedup shortcut can exploit.
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut buf = vec![0u8; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        for word in buf.chunks_exact_mut(8) {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            word.copy_from_slice(&state.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
        }
        let n = left.min(buf.len() as u64) as usize;
        f.write_all(&buf[..n])
            .with_context(|| format!("writing {}", path.display()))?;
        left -= n as u64;
    }
    f.sync_all()
        .with_context(|| format!("fsync {}", path.display()))?;
    // Clean now, so DONTNEED evicts every page of it.
    // SAFETY: fadvise on our open fd.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    Ok(())
}

/// `echo 1 > /proc/sys/vm/drop_caches`: drop clean page cache host-wide.
pub fn drop_caches() -> Result<()> {
    std::fs::write("/proc/sys/vm/drop_caches", "1").context("writing /proc/sys/vm/drop_caches")
}
