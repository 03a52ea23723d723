//! Host probes: tiny live experiments for behaviour the sim profile cannot know because it
//! depends on the host's history since boot.
//!
//! [`swapin_mthp`]: does this host swap large folios back in whole from a synchronous device?
//! 6.13+ does (alloc_swap_folio), but 6.18 falls back to order 0 for good once zswap has been
//! enabled since boot (`zswap_never_enabled()`), which no sysfs file shows. The probe pages out
//! 64K folios to a zram device of its own and reads them back: `hugepages-64kB/stats/swpin`
//! grows if and only if the host swaps in mTHP. Like a run, it journals and restores every
//! setting it changes and removes the device it created.

use crate::counters;
use crate::exec::{self, LiveTask};
use crate::run::host_settings;
use crate::settings::{self, HostGuard};
use crate::swapdev;
use crate::{LiveOptions, Refusal};
use anyhow::{bail, Context, Result};
use foliosim::mm::madvise::Advice;
use foliosim::mm::mmap::ThpAdvice;
use foliosim::scenario::{Bytes, SwapDeviceKind, SwapDeviceSpec};
use foliosim::workload::Op;
use foliosim::Scenario;
use serde::Serialize;
use std::time::{Duration, Instant};

/// 64K folios paged out and read back.
pub const PROBE_FOLIOS: u32 = 16;
const PAGES_PER_64K: u32 = 16;
/// Above every swap area the host may have, so the probe's pages go to the probe's device.
const PROBE_SWAP_PRIORITY: i32 = 32767;
const PROBE_TIMEOUT: Duration = Duration::from_secs(60);

/// The host settings for the probe: 64K for MADV_HUGEPAGE regions only (other processes do
/// not add to its counters), every other size off, zswap off for the probe. Only the settings
/// are used; the workload (a scenario needs one) is not run.
const PROBE_SCENARIO: &str = r#"
[machine]
memory = "64M"
[sysfs]
thp_enabled = "never"
[sysfs.hugepages]
"64K" = "madvise"
"2M" = "never"
[[workload]]
kind = "usemem"
nproc = 1
size = "1M"
"#;

/// What the probe saw: counter deltas of `hugepages-64kB/stats/*` over the experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SwapinMthpProbe {
    /// 64K folios the probe faulted, paged out and read back.
    pub folios: u64,
    pub anon_fault_alloc: u64,
    pub swpout: u64,
    pub swpin: u64,
    /// zswap's `enabled` parameter when the probe started (it runs with zswap off).
    pub zswap_enabled: bool,
}

impl SwapinMthpProbe {
    /// Ok(whether the host swaps mTHP in whole), or why the probe cannot tell: its folios were
    /// not faulted or not swapped out as 64K folios, so no swap-in could be whole.
    pub fn verdict(&self) -> Result<bool, String> {
        if self.anon_fault_alloc < self.folios || self.swpout < self.folios {
            return Err(format!(
                "inconclusive: of {} 64K folios, {} were faulted and {} swapped out whole",
                self.folios, self.anon_fault_alloc, self.swpout
            ));
        }
        Ok(self.swpin > 0)
    }

    /// One line for reports.
    pub fn describe(&self) -> String {
        match self.verdict() {
            Ok(true) => format!(
                "this host swaps in mTHP ({} of {} 64K folios came back whole from zram)",
                self.swpin.min(self.folios),
                self.folios
            ),
            Ok(false) => format!(
                "this host does not swap in mTHP (0 of {} 64K folios came back whole from zram; {})",
                self.folios,
                if self.zswap_enabled {
                    "zswap is enabled"
                } else {
                    "6.18 stops once zswap has been enabled since boot"
                }
            ),
            Err(why) => format!("mTHP swap-in probe {why}"),
        }
    }
}

/// The probe's task: map 64K-aligned MADV_HUGEPAGE memory, write it, MADV_PAGEOUT it, read it.
fn probe_ops() -> Vec<Op> {
    let nr = PROBE_FOLIOS * PAGES_PER_64K;
    vec![
        Op::Mmap {
            vma: 0,
            nr_pages: nr,
            thp: ThpAdvice::Hugepage,
        },
        Op::Touch {
            vma: 0,
            first: 0,
            nr,
            write: true,
        },
        Op::Madvise {
            vma: 0,
            first: 0,
            nr,
            advice: Advice::Pageout,
        },
        Op::Touch {
            vma: 0,
            first: 0,
            nr,
            write: false,
        },
        Op::Munmap { vma: 0 },
        Op::Exit,
    ]
}

/// Run the mTHP swap-in probe (root, `--live` only). The host is restored before this returns.
pub fn swapin_mthp(opts: &LiveOptions) -> Result<SwapinMthpProbe> {
    if !opts.allow_live {
        return Err(Refusal::NotAllowed.into());
    }
    crate::live_capable().map_err(|why| Refusal::Unsupported(format!("mTHP probe: {why}")))?;
    let mut guard = HostGuard::acquire()?;
    let result = probe_holding(&mut guard);
    let restored = guard.restore();
    let probe = result?;
    restored?;
    Ok(probe)
}

fn probe_holding(guard: &mut HostGuard) -> Result<SwapinMthpProbe> {
    let scenario = Scenario::from_toml_str(PROBE_SCENARIO).expect("the probe's scenario is valid");
    let zswap_enabled = settings::read_knob("/sys/module/zswap/parameters/enabled")
        .is_ok_and(|v| v == "Y" || v == "1");
    for (path, value) in host_settings(&scenario) {
        guard.set_sysfs(&path, &value)?;
    }
    let spec = SwapDeviceSpec {
        priority: PROBE_SWAP_PRIORITY,
        ..SwapDeviceSpec::new(SwapDeviceKind::Zram, Bytes(16 << 20))
    };
    swapdev::create(guard, 0, &spec, &scenario.sysfs.zram.comp_algorithm)
        .context("creating the probe's zram swap device")?;
    let tasks = [LiveTask {
        name: "swapin-mthp-probe".into(),
        workload: 0,
        cgroup_procs: None,
        ops: probe_ops(),
        ..Default::default()
    }];
    let deadline = Instant::now() + PROBE_TIMEOUT;
    let before = counters::snapshot();
    let outcome = exec::run_tasks(&tasks, &|| {
        if settings::interrupted() {
            return Some("interrupted by a signal; probe killed, settings restored".into());
        }
        (Instant::now() > deadline).then(|| format!("mTHP probe timed out after {PROBE_TIMEOUT:?}"))
    })?;
    let after = counters::snapshot();
    if let Some(failure) = outcome.tasks.iter().find_map(|t| t.failure.clone()) {
        bail!("mTHP swap-in probe task failed: {failure}");
    }
    let (events, _) = counters::delta(&before, &after);
    let stat = |name: &str| {
        events
            .get(&format!("hugepages-64kB/stats/{name}"))
            .copied()
            .unwrap_or(0)
    };
    Ok(SwapinMthpProbe {
        folios: PROBE_FOLIOS as u64,
        anon_fault_alloc: stat("anon_fault_alloc"),
        swpout: stat("swpout"),
        swpin: stat("swpin"),
        zswap_enabled,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(fault: u64, out: u64, swpin: u64) -> SwapinMthpProbe {
        SwapinMthpProbe {
            folios: 16,
            anon_fault_alloc: fault,
            swpout: out,
            swpin,
            zswap_enabled: false,
        }
    }

    #[test]
    fn verdict_needs_whole_swap_outs_first() {
        assert_eq!(probe(16, 16, 16).verdict(), Ok(true));
        assert_eq!(probe(16, 16, 0).verdict(), Ok(false));
        assert!(
            probe(16, 0, 0).verdict().is_err(),
            "nothing swapped out whole"
        );
        assert!(probe(0, 0, 0).verdict().is_err(), "no 64K folio faulted");
        assert!(probe(16, 16, 0)
            .describe()
            .contains("does not swap in mTHP"));
    }

    #[test]
    fn the_probe_enables_64k_for_madvised_regions_only() {
        let s = Scenario::from_toml_str(PROBE_SCENARIO).unwrap();
        let knobs = host_settings(&s);
        let value = |suffix: &str| {
            knobs
                .iter()
                .find(|(p, _)| p.ends_with(suffix))
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(value("transparent_hugepage/enabled"), Some("never"));
        if std::path::Path::new(counters::THP_DIR)
            .join("hugepages-64kB")
            .exists()
        {
            assert_eq!(value("hugepages-64kB/enabled"), Some("madvise"));
            assert_eq!(value("hugepages-2048kB/enabled"), Some("never"));
        }
    }

    #[test]
    fn the_probe_region_is_whole_64k_folios() {
        let Op::Mmap { nr_pages, thp, .. } = probe_ops()[0] else {
            panic!("the probe starts with its mmap");
        };
        assert_eq!(nr_pages, PROBE_FOLIOS * PAGES_PER_64K);
        assert_eq!(thp, ThpAdvice::Hugepage);
        // Below PMD size, so no 2M THP can take the region whatever the host's settings.
        assert!(nr_pages < 512);
    }
}
