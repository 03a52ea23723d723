//! One thread's op interpreter. The threads of a process share its VMA table (ids are per
//! process, as the sim's mm is shared) and its barriers; each keeps its own timer, last mincore
//! answer, marks and latency samples.

use crate::counters;
use crate::files;
use crate::shared_barrier::SharedBarriers;
use crate::tmpfs;
use anyhow::{bail, Context, Result};
use foliosim::mm::madvise::Advice;
use foliosim::mm::mmap::ThpAdvice;
use foliosim::workload::Op;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::io::AsRawFd;
use std::path::PathBuf;
use std::sync::{Condvar, Mutex};

const PAGE_SIZE: usize = 4096;
const PMD_SIZE: usize = 2 << 20;
// Linux madvise advice values (include/uapi/asm-generic/mman-common.h).
const MADV_DONTNEED: i32 = 4;
const MADV_HUGEPAGE: i32 = 14;
const MADV_NOHUGEPAGE: i32 = 15;
const MADV_COLD: i32 = 20;
const MADV_PAGEOUT: i32 = 21;

/// What one thread sends back.
#[derive(Serialize, Deserialize, Default)]
pub struct ThreadReport {
    pub marks: Vec<(usize, u64, BTreeMap<String, u64>)>,
    /// (series, ns) per RecordLatency, as the sim's `UserProgram.latencies`.
    pub latencies: Vec<(u8, u64)>,
    pub error: Option<String>,
}

#[derive(Clone, Copy)]
struct Region {
    addr: *mut u8,
    len: usize,
}

// SAFETY: a Region is an address range of this process; threads of the process may use it.
unsafe impl Send for Region {}

/// pthread_barrier_wait that another thread's failure releases (with an error), so a failed
/// thread cannot leave its siblings waiting forever.
struct Barrier {
    parties: u32,
    state: Mutex<(u32, u64, bool)>, // (arrived, generation, aborted)
    cv: Condvar,
}

impl Barrier {
    fn wait(&self) -> Result<()> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.2 {
            bail!("barrier abandoned: another thread of the process failed");
        }
        s.0 += 1;
        if s.0 == self.parties {
            s.0 = 0;
            s.1 += 1;
            self.cv.notify_all();
            return Ok(());
        }
        let generation = s.1;
        while s.1 == generation && !s.2 {
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        if s.1 == generation {
            bail!("barrier abandoned: another thread of the process failed");
        }
        Ok(())
    }

    fn abort(&self) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).2 = true;
        self.cv.notify_all();
    }
}

/// What the threads of one process share.
pub struct Process {
    vmas: Mutex<Vec<Option<Region>>>,
    barriers: BTreeMap<u32, Barrier>,
    /// Where the run's files are (`files::path`); None: file ops fail.
    file_dir: Option<PathBuf>,
    /// The run's tmpfs mount directories (crate::tmpfs), by `[[tmpfs]]` index.
    tmpfs_dirs: Vec<PathBuf>,
    /// VMA ids some thread stores to: file mappings of the others are mapped read-only, as
    /// thpscale maps its work file.
    written: BTreeSet<u32>,
    seed: u64,
    /// Barriers met with other task processes (crate::shared_barrier).
    shared: Option<std::sync::Arc<SharedBarriers>>,
}

impl Process {
    /// The shared state of a process running `programs` (one op list per thread).
    pub fn new(
        programs: &[&[Op]],
        (file_dir, tmpfs_dirs): (Option<PathBuf>, Vec<PathBuf>),
        seed: u64,
        shared: Option<std::sync::Arc<SharedBarriers>>,
    ) -> Result<Process> {
        let mut barriers = BTreeMap::new();
        let mut written = BTreeSet::new();
        for op in programs.iter().flat_map(|p| p.iter()) {
            match op {
                Op::Barrier { id, .. } if shared.as_ref().is_some_and(|s| s.has(*id)) => {}
                Op::Barrier { id, parties } => {
                    let b = barriers.entry(*id).or_insert_with(|| Barrier {
                        parties: *parties,
                        state: Mutex::new((0, 0, false)),
                        cv: Condvar::new(),
                    });
                    if b.parties != *parties {
                        bail!(
                            "barrier {id} waited on with {} and {parties} parties",
                            b.parties
                        );
                    }
                }
                Op::Touch {
                    vma, write: true, ..
                }
                | Op::Access {
                    vma, write: true, ..
                } => {
                    written.insert(*vma);
                }
                _ => {}
            }
        }
        Ok(Process {
            vmas: Mutex::new(vec![]),
            barriers,
            file_dir,
            tmpfs_dirs,
            written,
            seed,
            shared,
        })
    }

    /// Release every thread waiting at a barrier (a thread failed), other processes' too.
    pub fn abort(&self) {
        for b in self.barriers.values() {
            b.abort();
        }
        if let Some(s) = &self.shared {
            s.abort();
        }
    }

    fn vma(&self, vma: u32) -> Result<Region> {
        self.vmas
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(vma as usize)
            .copied()
            .flatten()
            .with_context(|| format!("vma {vma} is not mapped"))
    }

    fn set_vma(&self, vma: u32, region: Option<Region>) {
        let mut vmas = self.vmas.lock().unwrap_or_else(|e| e.into_inner());
        let i = vma as usize;
        if vmas.len() <= i {
            vmas.resize(i + 1, None);
        }
        vmas[i] = region;
    }

    fn shmem_path(&self, mount: u32, file: u32) -> Result<PathBuf> {
        let dir = self
            .tmpfs_dirs
            .get(mount as usize)
            .with_context(|| format!("shmem op on tmpfs[{mount}], which the run did not mount"))?;
        Ok(tmpfs::path(dir, file))
    }

    fn file_path(&self, file: u32) -> Result<PathBuf> {
        let dir = self
            .file_dir
            .as_ref()
            .context("file ops need the run's file directory")?;
        Ok(files::path(dir, file))
    }
}

pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime into a local.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Reserve `len` bytes + 2 MiB of address space and return the 2 MiB aligned part (the
/// sim's VMAs start aligned, so every folio size up to PMD fits the same way), the rest
/// unmapped. `fd`: map that file at `offset` there instead of anonymous memory.
fn mmap_aligned(len: usize, file: Option<(i32, u64, bool, bool)>) -> Result<Region> {
    let padded = len + PMD_SIZE;
    // SAFETY: a fresh anonymous private mapping, trimmed below.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            padded,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        bail!("mmap {len} bytes: {}", std::io::Error::last_os_error());
    }
    let start = raw as usize;
    let aligned = (start + PMD_SIZE - 1) & !(PMD_SIZE - 1);
    // SAFETY: unmapping the unaligned head and the tail of our own fresh mapping.
    unsafe {
        if aligned > start {
            libc::munmap(raw, aligned - start);
        }
        let end = aligned + len;
        if start + padded > end {
            libc::munmap(end as *mut libc::c_void, start + padded - end);
        }
    }
    if let Some((fd, offset, shared, writable)) = file {
        let prot = libc::PROT_READ | if writable { libc::PROT_WRITE } else { 0 };
        let flags = libc::MAP_FIXED
            | if shared {
                libc::MAP_SHARED
            } else {
                libc::MAP_PRIVATE
            };
        // SAFETY: replaces our own reservation at the same address.
        let got = unsafe {
            libc::mmap(
                aligned as *mut libc::c_void,
                len,
                prot,
                flags,
                fd,
                offset as libc::off_t,
            )
        };
        if got == libc::MAP_FAILED {
            let e = std::io::Error::last_os_error();
            // SAFETY: our reservation.
            unsafe { libc::munmap(aligned as *mut libc::c_void, len) };
            bail!("mmap of a file, {len} bytes at {offset}: {e}");
        }
    }
    Ok(Region {
        addr: aligned as *mut u8,
        len,
    })
}

fn madvise(region: Region, first: u32, nr: u32, advice: i32, name: &str) -> Result<()> {
    let offset = first as usize * PAGE_SIZE;
    let len = nr as usize * PAGE_SIZE;
    if offset + len > region.len {
        bail!("madvise {name}: pages {first}+{nr} beyond the mapping");
    }
    // SAFETY: the range lies within our mapping.
    let rc = unsafe { libc::madvise(region.addr.add(offset).cast(), len, advice) };
    if rc != 0 {
        bail!("madvise({name}): {}", std::io::Error::last_os_error());
    }
    Ok(())
}

/// Store to every 8-byte word of each page (vm-scalability usemem's loop); the values differ
/// per word so neither zram nor zswap sees same-filled pages. Reads load every word.
fn touch(region: Region, first: u32, nr: u32, write: bool) -> Result<()> {
    let first = first as usize;
    let nr = nr as usize;
    if (first + nr) * PAGE_SIZE > region.len {
        bail!("touch: pages {first}+{nr} beyond the mapping");
    }
    let words = PAGE_SIZE / 8;
    let mut sink = 0u64;
    for page in first..first + nr {
        // SAFETY: the page lies within our mapping (writable when `write`).
        let base = unsafe { region.addr.add(page * PAGE_SIZE) as *mut u64 };
        for w in 0..words {
            // SAFETY: within the page.
            unsafe {
                let p = base.add(w);
                if write {
                    std::ptr::write_volatile(p, ((page * words + w) as u64) | 1 << 40);
                } else {
                    sink = sink.wrapping_add(std::ptr::read_volatile(p));
                }
            }
        }
    }
    std::hint::black_box(sink);
    Ok(())
}

/// `count` loads (stores if `write`) of one word at uniformly random pages of [first,
/// first + nr), from a seeded xorshift stream (the sim draws its own; both are uniform).
fn access(region: Region, first: u32, nr: u32, count: u64, write: bool, seed: u64) -> Result<()> {
    if (first as usize + nr as usize) * PAGE_SIZE > region.len || nr == 0 {
        bail!("access: pages {first}+{nr} beyond the mapping");
    }
    let mut x = seed | 1;
    let mut sink = 0u64;
    for _ in 0..count {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let page = first as usize + (x % nr as u64) as usize;
        let word = ((x >> 32) as usize % (PAGE_SIZE / 8)) * 8;
        // SAFETY: within page `page` of our mapping (writable when `write`).
        unsafe {
            let p = region.addr.add(page * PAGE_SIZE + word) as *mut u64;
            if write {
                std::ptr::write_volatile(p, x);
            } else {
                sink = sink.wrapping_add(std::ptr::read_volatile(p));
            }
        }
    }
    std::hint::black_box(sink);
    Ok(())
}

/// mprotect(2) of the whole region.
fn mprotect(region: Region, prot: foliosim::mm::mprotect::Prot) -> Result<()> {
    use foliosim::mm::mprotect::Prot;
    let flags = match prot {
        Prot::None => libc::PROT_NONE,
        Prot::Read => libc::PROT_READ,
        Prot::ReadWrite => libc::PROT_READ | libc::PROT_WRITE,
    };
    // SAFETY: our own mapping, whole.
    let rc = unsafe { libc::mprotect(region.addr.cast(), region.len, flags) };
    if rc != 0 {
        bail!("mprotect: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

/// mincore() of one page: resident in memory?
fn mincore(region: Region, index: u32) -> Result<bool> {
    if (index as usize + 1) * PAGE_SIZE > region.len {
        bail!("mincore: page {index} beyond the mapping");
    }
    let mut vec = 0u8;
    // SAFETY: one page of our mapping, one byte of answer.
    let rc = unsafe {
        libc::mincore(
            region.addr.add(index as usize * PAGE_SIZE).cast(),
            PAGE_SIZE,
            &mut vec,
        )
    };
    if rc != 0 {
        bail!("mincore: {}", std::io::Error::last_os_error());
    }
    Ok(vec & 1 != 0)
}

/// read(2) of pages [first, first + nr) of a file, 1 MiB at a time.
fn read_file(path: &std::path::Path, first: u32, nr: u32) -> Result<()> {
    let f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    // No larger than the read: with mTHP a buffer's untouched tail would fault in with the
    // pages read into and be swapped out as zero-filled memory the sim does not have.
    let mut buf = vec![0u8; (nr as usize * PAGE_SIZE).min(1 << 20)];
    let mut at = first as u64 * PAGE_SIZE as u64;
    let mut left = nr as u64 * PAGE_SIZE as u64;
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        // SAFETY: pread into our buffer of at least n bytes.
        let got = unsafe { libc::pread(f.as_raw_fd(), buf.as_mut_ptr().cast(), n, at as i64) };
        if got < 0 {
            bail!(
                "read {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            );
        }
        if got == 0 {
            break;
        }
        at += got as u64;
        left -= got as u64;
    }
    Ok(())
}

/// Run one thread's ops. Marks record CLOCK_MONOTONIC and a counter snapshot; the time spent
/// reading the counters is taken out of later timestamps so measured phases are the
/// workload's alone.
pub fn interpret(proc_: &Process, ops: &[Op], report: &mut ThreadReport) -> Result<()> {
    let mut excluded_ns = 0u64;
    let mut timer_start_ns = 0u64;
    let mut last_resident = false;
    for op in ops {
        match op {
            Op::Mark(m) => {
                let t0 = now_ns();
                let snapshot = counters::snapshot();
                let t1 = now_ns();
                report.marks.push((*m, t0 - excluded_ns, snapshot));
                excluded_ns += t1 - t0;
            }
            Op::Exit => break,
            Op::TimerStart => timer_start_ns = now_ns(),
            Op::Mincore { vma, index } => last_resident = mincore(proc_.vma(*vma)?, *index)?,
            Op::RecordLatency {
                if_resident,
                otherwise,
            } => {
                let series = if last_resident {
                    *if_resident
                } else {
                    *otherwise
                };
                report
                    .latencies
                    .push((series, now_ns().saturating_sub(timer_start_ns)));
            }
            Op::CreateFile { .. }
            | Op::ReadFile { .. }
            | Op::DropCaches
            | Op::ShmemWrite { .. }
            | Op::ShmemRead { .. }
            | Op::ShmemUnlink { .. } => file_op(proc_, op)?,
            other => process_op(proc_, other)?,
        }
    }
    Ok(())
}

/// An op on the process's own memory, or one that waits or spins.
fn process_op(proc_: &Process, op: &Op) -> Result<()> {
    match op {
        Op::Mmap { vma, nr_pages, thp } => map_anon(proc_, *vma, *nr_pages, *thp)?,
        Op::MmapFile {
            vma,
            file,
            offset_pages,
            nr_pages,
            shared,
        } => map_file(proc_, *vma, *file, *offset_pages, *nr_pages, *shared)?,
        Op::Touch {
            vma,
            first,
            nr,
            write,
        } => touch(proc_.vma(*vma)?, *first, *nr, *write)?,
        Op::Madvise {
            vma,
            first,
            nr,
            advice,
        } => {
            let (value, name) = madv_flag(*advice);
            madvise(proc_.vma(*vma)?, *first, *nr, value, name)?;
        }
        Op::Munmap { vma } => {
            let region = proc_.vma(*vma)?;
            // SAFETY: unmapping our own mapping, forgotten below.
            unsafe { libc::munmap(region.addr.cast(), region.len) };
            proc_.set_vma(*vma, None);
        }
        Op::MunmapRange { vma, first, nr } => munmap_range(proc_.vma(*vma)?, *vma, *first, *nr)?,
        Op::Compute { ns } => {
            let until = now_ns() + ns;
            while now_ns() < until {
                std::hint::spin_loop();
            }
        }
        Op::Sleep { ns } => std::thread::sleep(std::time::Duration::from_nanos(*ns)),
        Op::CompactMemory => std::fs::write("/proc/sys/vm/compact_memory", "1")
            .context("writing /proc/sys/vm/compact_memory")?,
        Op::Barrier { id, .. } => match &proc_.shared {
            Some(s) if s.has(*id) => s.wait(*id)?,
            _ => proc_
                .barriers
                .get(id)
                .with_context(|| format!("barrier {id} unknown"))?
                .wait()?,
        },
        Op::Access {
            vma,
            first,
            nr,
            count,
            write,
            ..
        } => access(
            proc_.vma(*vma)?,
            *first,
            *nr,
            *count,
            *write,
            proc_.seed ^ u64::from(*vma) << 32 ^ u64::from(*first),
        )?,
        // The hot set is the sim's description of the code that runs here.
        Op::TlbHotSet { .. } => {}
        Op::Mprotect { vma, prot } => mprotect(proc_.vma(*vma)?, *prot)?,
        other => bail!("operation {other:?} is not supported by the live backend yet"),
    }
    Ok(())
}

/// An op on the run's files or tmpfs.
fn file_op(proc_: &Process, op: &Op) -> Result<()> {
    match op {
        Op::CreateFile { file, nr_pages } => files::create(
            &proc_.file_path(*file)?,
            *nr_pages as u64 * PAGE_SIZE as u64,
            proc_.seed ^ u64::from(*file),
        )?,
        Op::ReadFile { file, first, nr } => read_file(&proc_.file_path(*file)?, *first, *nr)?,
        Op::DropCaches => files::drop_caches()?,
        Op::ShmemWrite {
            mount,
            file,
            first,
            nr,
        } => tmpfs::write(&proc_.shmem_path(*mount, *file)?, *first, *nr)?,
        Op::ShmemRead { file, first, nr } => {
            read_file(&tmpfs::find(&proc_.tmpfs_dirs, *file)?, *first, *nr)?
        }
        Op::ShmemUnlink { file } => {
            let path = tmpfs::find(&proc_.tmpfs_dirs, *file)?;
            std::fs::remove_file(&path).with_context(|| format!("unlinking {}", path.display()))?
        }
        other => bail!("operation {other:?} is not a file operation"),
    }
    Ok(())
}

/// The madvise(2) flag of an advice, and its name for errors.
fn madv_flag(advice: Advice) -> (i32, &'static str) {
    match advice {
        Advice::Pageout => (MADV_PAGEOUT, "PAGEOUT"),
        Advice::Cold => (MADV_COLD, "COLD"),
        Advice::Dontneed => (MADV_DONTNEED, "DONTNEED"),
        Advice::Hugepage => (MADV_HUGEPAGE, "HUGEPAGE"),
        Advice::Nohugepage => (MADV_NOHUGEPAGE, "NOHUGEPAGE"),
    }
}

/// mmap of anonymous memory, with the THP advice the op gives.
fn map_anon(proc_: &Process, vma: u32, nr_pages: u32, thp: ThpAdvice) -> Result<()> {
    let region = mmap_aligned(nr_pages as usize * PAGE_SIZE, None)?;
    match thp {
        ThpAdvice::Hugepage => madvise(region, 0, nr_pages, MADV_HUGEPAGE, "HUGEPAGE")?,
        ThpAdvice::NoHugepage => madvise(region, 0, nr_pages, MADV_NOHUGEPAGE, "NOHUGEPAGE")?,
        ThpAdvice::Default => {}
    }
    proc_.set_vma(vma, Some(region));
    Ok(())
}

/// mmap of one of the run's files, writable when the process writes to it.
fn map_file(
    proc_: &Process,
    vma: u32,
    file: u32,
    offset_pages: u32,
    nr_pages: u32,
    shared: bool,
) -> Result<()> {
    let path = proc_.file_path(file)?;
    let writable = proc_.written.contains(&vma);
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(writable && shared)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    let region = mmap_aligned(
        nr_pages as usize * PAGE_SIZE,
        Some((
            f.as_raw_fd(),
            offset_pages as u64 * PAGE_SIZE as u64,
            shared,
            writable,
        )),
    )?;
    proc_.set_vma(vma, Some(region));
    Ok(())
}

/// munmap of pages [first, first + nr) of a mapping; the sim leaves a hole there too.
fn munmap_range(region: Region, vma: u32, first: u32, nr: u32) -> Result<()> {
    let (offset, len) = (first as usize * PAGE_SIZE, nr as usize * PAGE_SIZE);
    if offset + len > region.len {
        bail!("munmap: pages {first}+{nr} beyond vma {vma}");
    }
    // SAFETY: part of our own mapping; the sim leaves a hole there too.
    unsafe { libc::munmap(region.addr.add(offset).cast(), len) };
    Ok(())
}
