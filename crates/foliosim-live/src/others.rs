//! Other processes' faults in the host-wide fault counters. /proc/vmstat and the
//! hugepages-*/stats files count every process: while a run has set a size to `madvise`, any
//! process with MADV_HUGEPAGE memory (VM_HUGEPAGE, `hg` in smaps' VmFlags) faults folios of
//! that size too, and in a size set to `always` every process does. The sim engine is one such
//! process (engine/huge_alloc.rs madvises its arrays), so a `foliosim run` beside a live run
//! adds its faults to the run's `anon_fault_alloc`. Each fault is one minor fault of the
//! process that takes it, so their minor faults over the run bound what they can add.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fs;

/// One process's minor faults at an instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcFaults {
    pub comm: String,
    pub minflt: u64,
}

/// Minor faults of every process but ours (and our children), by pid.
pub type Snapshot = BTreeMap<u32, ProcFaults>;

/// What other processes may have added to the host-wide fault counters during a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct OtherFaults {
    /// Minor faults during the run of the other processes with MADV_HUGEPAGE memory: at most
    /// this many faults of a size the run set to `madvise` were theirs.
    pub madvised_minflt: u64,
    /// Minor faults during the run of every other process: the bound for a size set to
    /// `always`.
    pub all_minflt: u64,
    /// The processes with MADV_HUGEPAGE memory that faulted, `comm[pid] faults`.
    pub madvisers: Vec<String>,
}

impl OtherFaults {
    /// The live note, when someone with MADV_HUGEPAGE memory faulted during the run.
    pub fn note(&self) -> Option<String> {
        (self.madvised_minflt > 0).then(|| {
            format!(
                "other processes with MADV_HUGEPAGE memory faulted during the run ({}): up to {} of their faults count in the sizes set to madvise",
                self.madvisers.join(", "),
                self.madvised_minflt
            )
        })
    }
}

/// The minor-fault count of a /proc/<pid>/stat line: the 10th field, counted after the
/// parenthesised comm (which may hold spaces and parentheses). Also the parent pid.
pub fn parse_stat(text: &str) -> Option<(String, u32, u64)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    let fields: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // After the comm: state, ppid, pgrp, session, tty_nr, tpgid, flags, minflt.
    let ppid = fields.get(1)?.parse().ok()?;
    let minflt = fields.get(7)?.parse().ok()?;
    Some((comm, ppid, minflt))
}

/// Does an smaps text show a VM_HUGEPAGE mapping (`hg` in a VmFlags line)?
pub fn has_hugepage_vma(smaps: &str) -> bool {
    smaps
        .lines()
        .filter_map(|l| l.strip_prefix("VmFlags:"))
        .any(|flags| flags.split_whitespace().any(|f| f == "hg"))
}

/// Every other process's minor faults now (not this process, not its children).
pub fn snapshot() -> Snapshot {
    let me = std::process::id();
    let Ok(dir) = fs::read_dir("/proc") else {
        return Snapshot::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter_map(|pid| {
            let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (comm, ppid, minflt) = parse_stat(&text)?;
            (ppid != me).then_some((pid, ProcFaults { comm, minflt }))
        })
        .collect()
}

/// The faults between two snapshots. A process seen only at the end started during the run:
/// all its faults count. smaps (which walks page tables) is read only for processes that
/// faulted. A process that started and exited within the run is not seen.
pub fn between(before: &Snapshot, after: &Snapshot) -> OtherFaults {
    between_with(before, after, |pid| {
        fs::read_to_string(format!("/proc/{pid}/smaps")).is_ok_and(|s| has_hugepage_vma(&s))
    })
}

fn between_with(
    before: &Snapshot,
    after: &Snapshot,
    madvised: impl Fn(u32) -> bool,
) -> OtherFaults {
    let mut out = OtherFaults::default();
    for (&pid, now) in after {
        let was = before
            .get(&pid)
            .filter(|b| b.comm == now.comm && b.minflt <= now.minflt)
            .map_or(0, |b| b.minflt);
        let faults = now.minflt - was;
        if faults == 0 {
            continue;
        }
        out.all_minflt += faults;
        if madvised(pid) {
            out.madvised_minflt += faults;
            out.madvisers.push(format!("{}[{pid}] {faults}", now.comm));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_after_a_comm_with_spaces_and_parens() {
        let line = "2023 (foliosim (x) y) S 1 2023 2023 0 -1 4194560 1159765 0 3 0 12 5";
        let (comm, ppid, minflt) = parse_stat(line).unwrap();
        assert_eq!(comm, "foliosim (x) y");
        assert_eq!(ppid, 1);
        assert_eq!(minflt, 1159765);
        assert!(parse_stat("12 (x) S 1").is_none());
    }

    #[test]
    fn hugepage_vma_is_the_hg_flag_only() {
        let smaps = "7f00-7f10 rw-p 0 00:00 0\nVmFlags: rd wr mr mw me ac sd\n\
                     7f10-7f20 rw-p 0 00:00 0\nVmFlags: rd wr mr mw me ac hg sd\n";
        assert!(has_hugepage_vma(smaps));
        assert!(!has_hugepage_vma("VmFlags: rd wr mr mw me nh ac\n"));
        assert!(!has_hugepage_vma("Name: hg\n"));
    }

    fn snap(rows: &[(u32, &str, u64)]) -> Snapshot {
        rows.iter()
            .map(|&(pid, comm, minflt)| {
                let comm = comm.to_string();
                (pid, ProcFaults { comm, minflt })
            })
            .collect()
    }

    #[test]
    fn faults_between_snapshots_split_by_madvise() {
        let before = snap(&[(10, "sim", 100), (11, "rustc", 5), (12, "idle", 7)]);
        // 10 faulted 40 and madvises; 11 faulted 20; 12 none; 13 started during the run;
        // 14 reused a pid (another comm): all its faults count.
        let after = snap(&[
            (10, "sim", 140),
            (11, "rustc", 25),
            (12, "idle", 7),
            (13, "new", 3),
            (14, "b", 9),
        ]);
        let before = {
            let mut b = before;
            b.insert(
                14,
                ProcFaults {
                    comm: "a".into(),
                    minflt: 1,
                },
            );
            b
        };
        let got = between_with(&before, &after, |pid| pid == 10 || pid == 12);
        assert_eq!(got.all_minflt, 40 + 20 + 3 + 9);
        assert_eq!(got.madvised_minflt, 40);
        assert_eq!(got.madvisers, vec!["sim[10] 40".to_string()]);
        assert!(got.note().unwrap().contains("up to 40"));
        assert_eq!(
            between_with(&before, &before, |_| true),
            OtherFaults::default()
        );
    }
}
