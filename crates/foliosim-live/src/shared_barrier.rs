//! Barriers between task processes (a trace replay's fork, exec and wait points): single-use
//! counters in a MAP_SHARED page made before the tasks are forked, waited on with futexes.
//! The runner sets the abort word when a task process fails, so nobody waits forever.

use anyhow::{bail, Result};
use foliosim::workload::Op;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU32, Ordering};

pub struct SharedBarriers {
    base: *mut AtomicU32,
    len: usize,
    /// Barrier id -> (slot, parties).
    slots: BTreeMap<u32, (usize, u32)>,
}

// SAFETY: the mapping lives until drop and is only accessed through atomics.
unsafe impl Send for SharedBarriers {}
unsafe impl Sync for SharedBarriers {}

const FUTEX_WAIT: i32 = 0;
const FUTEX_WAKE: i32 = 1;

impl SharedBarriers {
    /// Barriers met by more than one of `processes` (each: every op of the process's threads).
    /// None when there are none.
    pub fn for_processes<'a>(
        processes: impl Iterator<Item = Vec<&'a Op>>,
    ) -> Result<Option<SharedBarriers>> {
        let mut users: BTreeMap<u32, (BTreeSet<usize>, u32)> = BTreeMap::new();
        for (p, ops) in processes.enumerate() {
            for op in ops {
                if let Op::Barrier { id, parties } = op {
                    users
                        .entry(*id)
                        .or_insert((BTreeSet::new(), *parties))
                        .0
                        .insert(p);
                }
            }
        }
        let shared: Vec<(u32, u32)> = users
            .into_iter()
            .filter(|(_, (procs, _))| procs.len() > 1)
            .map(|(id, (_, parties))| (id, parties))
            .collect();
        if shared.is_empty() {
            return Ok(None);
        }
        // One word per barrier, and the abort word last.
        let len = (shared.len() + 1) * 4;
        // SAFETY: a fresh shared anonymous mapping, zero-filled, unmapped on drop.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            bail!(
                "mmap of the shared barriers: {}",
                std::io::Error::last_os_error()
            );
        }
        Ok(Some(SharedBarriers {
            base: base.cast(),
            len,
            slots: shared
                .into_iter()
                .enumerate()
                .map(|(slot, (id, parties))| (id, (slot, parties)))
                .collect(),
        }))
    }

    fn word(&self, slot: usize) -> &AtomicU32 {
        // SAFETY: slot <= slots.len() words lie within the mapping.
        unsafe { &*self.base.add(slot) }
    }

    fn abort_word(&self) -> &AtomicU32 {
        self.word(self.slots.len())
    }

    pub fn has(&self, id: u32) -> bool {
        self.slots.contains_key(&id)
    }

    /// Arrive at barrier `id` and sleep until all its parties have.
    pub fn wait(&self, id: u32) -> Result<()> {
        let Some(&(slot, parties)) = self.slots.get(&id) else {
            bail!("barrier {id} is not shared");
        };
        let w = self.word(slot);
        if w.fetch_add(1, Ordering::SeqCst) + 1 >= parties {
            futex(w, FUTEX_WAKE, i32::MAX as u32, None);
            return Ok(());
        }
        loop {
            let v = w.load(Ordering::SeqCst);
            if v >= parties {
                return Ok(());
            }
            if self.abort_word().load(Ordering::SeqCst) != 0 {
                bail!("barrier abandoned: another task process failed");
            }
            futex(w, FUTEX_WAIT, v, Some(50_000_000));
        }
    }

    /// Release every waiter with an error (a task process failed or the run stops).
    pub fn abort(&self) {
        self.abort_word().store(1, Ordering::SeqCst);
        for &(slot, _) in self.slots.values() {
            futex(self.word(slot), FUTEX_WAKE, i32::MAX as u32, None);
        }
    }
}

impl Drop for SharedBarriers {
    fn drop(&mut self) {
        // SAFETY: our own mapping, no longer used.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// futex(2) on a word of the shared mapping (not FUTEX_PRIVATE: other processes wait on it).
fn futex(word: &AtomicU32, op: i32, val: u32, timeout_ns: Option<u64>) {
    let ts = timeout_ns.map(|ns| libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: futex on a valid aligned word; the timeout is a local or null.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op,
            val,
            ts_ptr,
            std::ptr::null::<u32>(),
            0,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_processes_meet_and_an_abort_releases_a_waiter() {
        let b = [Op::Barrier { id: 3, parties: 2 }];
        let other = [Op::Barrier { id: 4, parties: 2 }];
        let sb = SharedBarriers::for_processes(
            [vec![&b[0], &other[0]], vec![&b[0]], vec![&other[0]]].into_iter(),
        )
        .unwrap()
        .unwrap();
        assert!(sb.has(3) && sb.has(4));
        // SAFETY: fork; the child only waits at the barrier and _exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let code = i32::from(sb.wait(3).is_err());
            unsafe { libc::_exit(code) };
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        sb.wait(3).unwrap();
        let mut st = 0;
        // SAFETY: waitpid of our child.
        unsafe { libc::waitpid(pid, &mut st, 0) };
        assert!(libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0);
        // Nobody else arrives at 4: the abort releases the waiter with an error.
        std::thread::scope(|s| {
            let h = s.spawn(|| sb.wait(4));
            std::thread::sleep(std::time::Duration::from_millis(20));
            sb.abort();
            assert!(h.join().unwrap().is_err());
        });
    }
}
