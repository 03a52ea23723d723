//! Reading a file (`kind = "file_read"`): each of `nproc` tasks takes its share of a
//! `[[file]]` (task i: pages [i*n/nproc, (i+1)*n/nproc)) and reads it `passes` times, either
//! through a mapping (one access per page, `stride_pages` apart, a store with `write`) or
//! with read(2) requests of `read_pages` pages, each `stride_pages` requests apart. The
//! measured phase is the reading; throughput is the bytes each task covered over its time.

use super::{Op, TaskMarks, TaskSpec, WorkloadResult};
use crate::scenario::{FileReadSpec, FileSpec, PAGE_SIZE};

const MARK_START: usize = 0;
const MARK_END: usize = 1;

/// The file's id and pages, by name.
fn find(files: &[FileSpec], name: &str) -> Option<(u32, u32)> {
    let id = files.iter().position(|f| f.name == name)?;
    Some((id as u32, files[id].size.pages() as u32))
}

/// Task i's pages of a file of `nr_pages` split among `nproc`.
fn share(i: u32, nproc: u32, nr_pages: u32) -> (u32, u32) {
    let at = |i: u32| (i as u64 * nr_pages as u64 / nproc as u64) as u32;
    (at(i), at(i + 1))
}

/// The tasks; none when `files` lacks the file (a backend without the scenario's files).
pub fn tasks(spec: &FileReadSpec, files: &[FileSpec]) -> Vec<TaskSpec> {
    let FileReadSpec {
        file,
        nproc,
        mmap,
        shared,
        write,
        stride_pages,
        passes,
        read_pages,
        drop_caches_after,
        memcg,
        ..
    } = spec;
    let Some((id, nr_pages)) = find(files, file) else {
        return Vec::new();
    };
    (0..*nproc)
        .map(|i| {
            let (lo, hi) = share(i, *nproc, nr_pages);
            let len = hi - lo;
            let mut ops = Vec::new();
            if *mmap {
                ops.push(Op::MmapFile {
                    vma: 0,
                    file: id,
                    offset_pages: lo,
                    nr_pages: len,
                    shared: *shared,
                });
            }
            ops.push(Op::Mark(MARK_START));
            for _ in 0..*passes {
                if *mmap && *stride_pages == 1 {
                    ops.push(Op::Touch {
                        vma: 0,
                        first: 0,
                        nr: len,
                        write: *write,
                    });
                } else if *mmap {
                    ops.extend((0..len).step_by(*stride_pages as usize).map(|p| Op::Touch {
                        vma: 0,
                        first: p,
                        nr: 1,
                        write: *write,
                    }));
                } else {
                    let step = (*read_pages as usize) * (*stride_pages as usize);
                    ops.extend((lo..hi).step_by(step).map(|first| Op::ReadFile {
                        file: id,
                        first,
                        nr: (*read_pages).min(hi - first),
                    }));
                }
            }
            ops.push(Op::Mark(MARK_END));
            if *mmap {
                ops.push(Op::Munmap { vma: 0 });
            }
            if *drop_caches_after && i == 0 {
                ops.push(Op::DropCaches);
            }
            ops.push(Op::Exit);
            TaskSpec {
                name: format!("file_read-{i}"),
                memcg: memcg.clone(),
                ops,
                shares_mm_with: None,
            }
        })
        .collect()
}

/// Pages one pass of task i covers.
fn pages_per_pass(spec: &FileReadSpec, len: u32) -> u64 {
    let FileReadSpec {
        mmap,
        stride_pages,
        read_pages,
        ..
    } = spec;
    if *mmap {
        len.div_ceil(*stride_pages) as u64
    } else {
        let step = read_pages * stride_pages;
        let requests = len.div_ceil(step) as u64;
        // Every request is whole but possibly the last.
        (requests * *read_pages as u64).min(len as u64)
    }
}

pub fn report(spec: &FileReadSpec, marks: &[TaskMarks], files: &[FileSpec]) -> WorkloadResult {
    let FileReadSpec {
        file,
        nproc,
        passes,
        ..
    } = spec;
    let nr_pages = find(files, file).map_or(0, |(_, n)| n);
    let mut throughput = 0.0;
    let mut elapsed_max = 0;
    for (i, m) in marks.iter().enumerate() {
        let (Some(start), Some(end)) = (&m[MARK_START], &m[MARK_END]) else {
            continue;
        };
        let elapsed = (end.at_ns - start.at_ns).max(1);
        let (lo, hi) = share(i as u32, *nproc, nr_pages);
        let len = hi - lo;
        let bytes = pages_per_pass(spec, len) * *passes as u64 * PAGE_SIZE;
        throughput += bytes as f64 * 1e9 / elapsed as f64;
        elapsed_max = elapsed_max.max(elapsed);
    }
    WorkloadResult {
        kind: "file_read".into(),
        throughput_bytes_per_s: throughput,
        elapsed_ns_max: elapsed_max,
        tasks: marks.len() as u32,
        ..WorkloadResult::default()
    }
}
