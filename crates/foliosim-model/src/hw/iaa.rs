//! An Intel IAA (In-Memory Analytics Accelerator)-like compression offload device, as the
//! iaa_crypto driver (drivers/crypto/intel/iaa) drives it for zswap's `deflate-iaa`.
//!
//! Geometry: `devices_per_socket` devices on each socket (Sapphire Rapids: 4), each with
//! `engines_per_device` engines (8) fed by one work queue of `wq_size` entries (the
//! iaa_crypto default configuration: one dedicated WQ per device, sized from WQCAP, 128 on SPR).
//! iaa_crypto maps each CPU to one device of its own package: the socket's CPUs are split
//! evenly over its devices.
//!
//! A job costs the CPU a submission (descriptor + doorbell), then takes the earliest free
//! engine of its device (so a busy device delays later jobs and contention between CPUs
//! emerges), runs for a fixed setup plus its bytes at the per-engine rate, and costs the CPU a
//! completion poll. Modes:
//! - [`IaaMode::Sync`]: iaa_crypto's default `sync_mode=sync`: submit one job, spin until it
//!   completes, next job.
//! - [`IaaMode::Batch`]: the zswap compress batching series (Kanchana P Sridhar, v6+ with
//!   `sync_mode=async`): submit up to `batch_size` jobs of a folio, then poll them all; the CPU
//!   waits once per sub-batch.
//!
//! Verification (`verify_compress`, iaa_crypto's default and seed 002's setting): when a
//! compress completes, the driver decompresses the output on the device and compares CRCs
//! before it returns (iaa_compress_verify, called synchronously from the completion path in
//! both modes), so every compress costs a second submission, device job and poll.
//!
//! Deterministic: time is simulated ns; calls are served in call order. Callers that run CPUs
//! slightly out of time order see a job queue behind a job submitted "later" in simulated time;
//! the error is bounded by one caller step.
//!
//! The CPU spins in both modes (the driver polls), so the CPU time of a call is its whole
//! duration. (`sync_mode=async_irq`, which sleeps, is not modelled.)

use crate::engine::cost::CostModel;

/// How the CPU drives the device for a multi-page request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IaaMode {
    /// One job at a time, polling each to completion (iaa_crypto `sync_mode=sync`).
    Sync,
    /// Up to `batch_size` jobs in flight, polled together (IAA_CRYPTO_MAX_BATCH_SIZE = 8 in the
    /// batching series).
    Batch { batch_size: u32 },
}

/// The batching series' IAA_CRYPTO_MAX_BATCH_SIZE / ZSWAP_MAX_BATCH_SIZE.
pub const IAA_CRYPTO_MAX_BATCH_SIZE: u32 = 8;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IaaConfig {
    pub sockets: u32,
    /// Seed 002's machine: 4 IAA devices per socket (dual-socket Sapphire Rapids).
    pub devices_per_socket: u32,
    /// accel-config on SPR reports max_engines 8 per IAA device.
    pub engines_per_device: u32,
    /// Work-queue entries per device (accel-config on SPR: work_queue_size 128; the batching
    /// series' usemem runs use 1 WQ of 128 entries per device).
    pub wq_size: u32,
    /// CPUs per socket, to map a CPU to its socket's devices (seed 002: 56).
    pub cpus_per_socket: u32,
    /// iaa_crypto `verify_compress` (default 1).
    pub verify_compress: bool,
}

impl Default for IaaConfig {
    /// Seed 002's machine: 2 sockets x 56 cores, 4 IAA per socket, verification on.
    fn default() -> IaaConfig {
        IaaConfig {
            sockets: 2,
            devices_per_socket: 4,
            engines_per_device: 8,
            wq_size: 128,
            cpus_per_socket: 56,
            verify_compress: true,
        }
    }
}

/// Per-job timing, from the cost model (engine/cost.rs, `iaa_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IaaCosts {
    pub submit_ns: u64,
    pub poll_ns: u64,
    pub compress_fixed_ns: u64,
    pub compress_ns_per_kib: u64,
    pub decompress_fixed_ns: u64,
    pub decompress_ns_per_kib: u64,
}

impl IaaCosts {
    pub fn from_cost(c: &CostModel) -> IaaCosts {
        IaaCosts {
            submit_ns: c.iaa_submit_ns,
            poll_ns: c.iaa_poll_ns,
            compress_fixed_ns: c.iaa_compress_fixed_ns,
            compress_ns_per_kib: c.iaa_compress_ns_per_kib,
            decompress_fixed_ns: c.iaa_decompress_fixed_ns,
            decompress_ns_per_kib: c.iaa_decompress_ns_per_kib,
        }
    }

    /// Device service time of one job of `bytes` (uncompressed: compress input, decompress
    /// output).
    pub fn service_ns(&self, op: IaaOp, bytes: u32) -> u64 {
        let (fixed, per_kib) = match op {
            IaaOp::Compress => (self.compress_fixed_ns, self.compress_ns_per_kib),
            IaaOp::Decompress => (self.decompress_fixed_ns, self.decompress_ns_per_kib),
        };
        fixed + (bytes as u64 * per_kib).div_ceil(1024)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IaaOp {
    Compress,
    Decompress,
}

#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum IaaError {
    #[error("bad IAA config: {0}")]
    BadConfig(String),
    #[error("cpu {cpu} is not on the machine ({cpus} CPUs)")]
    NoSuchCpu { cpu: u32, cpus: u32 },
    #[error("IAA batch size {0}: must be 1..={IAA_CRYPTO_MAX_BATCH_SIZE}")]
    BadBatch(u32),
}

/// What one call cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct IaaTiming {
    /// CPU time the caller spent (submitting, spinning, polling): done_at_ns - now_ns.
    pub cpu_busy_ns: u64,
    pub done_at_ns: u64,
    /// Time the call's jobs waited for a WQ slot or an engine, summed over jobs.
    pub queue_wait_ns: u64,
    pub device: u32,
}

/// Bookings each engine (and each WQ) remembers.
const CALENDAR_MAX: usize = 512;

/// The earliest start >= `from` of a `len`-long job in an engine with `busy` intervals.
fn first_gap(busy: &[(u64, u64)], from: u64, len: u64) -> u64 {
    let mut start = from;
    let first = busy.partition_point(|&(_, end)| end <= from);
    for &(s0, e0) in &busy[first..] {
        if start + len <= s0 {
            break;
        }
        start = start.max(e0);
    }
    start
}

/// iaa_crypto's wq_stats per device, plus device busy time.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct IaaDeviceStats {
    pub comp_calls: u64,
    pub comp_bytes: u64,
    pub decomp_calls: u64,
    pub decomp_bytes: u64,
    /// Of the decompresses, those run to verify a compress.
    pub verify_calls: u64,
    /// Engine time spent on jobs, summed over engines.
    pub busy_ns: u64,
    pub queue_wait_ns: u64,
}

struct Device {
    /// Per engine: busy intervals [start, end), sorted. A calendar, not a "free at" time: the
    /// scheduler runs CPUs slightly out of time order (a long step books its jobs ahead of
    /// CPUs still behind it), and a job submitted earlier in simulated time must still find
    /// the gaps before a later booking.
    engine_busy: Vec<Vec<(u64, u64)>>,
    /// Completion times of jobs still occupying a WQ entry.
    /// Jobs in the WQ: (submitted, done), sorted by submission.
    outstanding: Vec<(u64, u64)>,
    stats: IaaDeviceStats,
}

/// All IAA devices of the machine.
pub struct Iaa {
    config: IaaConfig,
    costs: IaaCosts,
    devices: Vec<Device>,
}

impl Iaa {
    pub fn new(config: IaaConfig, costs: IaaCosts) -> Result<Iaa, IaaError> {
        for (name, v) in [
            ("sockets", config.sockets),
            ("devices_per_socket", config.devices_per_socket),
            ("engines_per_device", config.engines_per_device),
            ("wq_size", config.wq_size),
            ("cpus_per_socket", config.cpus_per_socket),
        ] {
            if v == 0 {
                return Err(IaaError::BadConfig(format!(
                    "{name} = 0: must be at least 1"
                )));
            }
        }
        let n = config.sockets * config.devices_per_socket;
        let devices = (0..n)
            .map(|_| Device {
                engine_busy: vec![Vec::new(); config.engines_per_device as usize],
                outstanding: Vec::new(),
                stats: IaaDeviceStats::default(),
            })
            .collect();
        Ok(Iaa {
            config,
            costs,
            devices,
        })
    }

    pub fn config(&self) -> &IaaConfig {
        &self.config
    }

    pub fn costs(&self) -> &IaaCosts {
        &self.costs
    }

    /// The device iaa_crypto gives `cpu`: its socket's CPUs split evenly over the socket's
    /// devices (CPUs beyond an uneven split share the last device).
    pub fn device_of_cpu(&self, cpu: u32) -> Result<u32, IaaError> {
        let c = &self.config;
        let cpus = c.sockets * c.cpus_per_socket;
        if cpu >= cpus {
            return Err(IaaError::NoSuchCpu { cpu, cpus });
        }
        let socket = cpu / c.cpus_per_socket;
        let per_dev = c.cpus_per_socket.div_ceil(c.devices_per_socket);
        let local = ((cpu % c.cpus_per_socket) / per_dev).min(c.devices_per_socket - 1);
        Ok(socket * c.devices_per_socket + local)
    }

    pub fn device_stats(&self, device: u32) -> Option<&IaaDeviceStats> {
        self.devices.get(device as usize).map(|d| &d.stats)
    }

    /// Sum over devices.
    pub fn total_stats(&self) -> IaaDeviceStats {
        let mut t = IaaDeviceStats::default();
        for d in &self.devices {
            t.comp_calls += d.stats.comp_calls;
            t.comp_bytes += d.stats.comp_bytes;
            t.decomp_calls += d.stats.decomp_calls;
            t.decomp_bytes += d.stats.decomp_bytes;
            t.verify_calls += d.stats.verify_calls;
            t.busy_ns += d.stats.busy_ns;
            t.queue_wait_ns += d.stats.queue_wait_ns;
        }
        t
    }

    /// Compress `pages` buffers of `page_bytes` each (a folio's pages) from `cpu` at `now_ns`.
    pub fn submit_compress(
        &mut self,
        now_ns: u64,
        cpu: u32,
        pages: u32,
        page_bytes: u32,
        mode: IaaMode,
    ) -> Result<IaaTiming, IaaError> {
        self.run(now_ns, cpu, IaaOp::Compress, pages, page_bytes, mode)
    }

    /// Decompress `pages` objects that expand to `page_bytes` each (zswap_load, or a batched
    /// swap-in).
    pub fn submit_decompress(
        &mut self,
        now_ns: u64,
        cpu: u32,
        pages: u32,
        page_bytes: u32,
        mode: IaaMode,
    ) -> Result<IaaTiming, IaaError> {
        self.run(now_ns, cpu, IaaOp::Decompress, pages, page_bytes, mode)
    }

    /// One job enters `dev`'s WQ at `t` (after the CPU's submission): wait for a WQ entry if
    /// all are taken (the submitter retries), take the earliest free engine. Returns
    /// (submission time, completion time, time waited for a WQ entry and an engine).
    fn enqueue(
        &mut self,
        dev: usize,
        t0: u64,
        op: IaaOp,
        bytes: u32,
        verify: bool,
    ) -> (u64, u64, u64) {
        let service = self.costs.service_ns(op, bytes);
        let wq_size = self.config.wq_size as usize;
        let d = &mut self.devices[dev];
        // WQ full at t0 (jobs submitted by then and not done): ENQCMD is refused and the
        // driver retries until an entry completes.
        let mut t = t0;
        while d.outstanding.len() >= wq_size {
            // Only jobs submitted by t can be in the WQ at t.
            let upto = d.outstanding.partition_point(|&(sub, _)| sub <= t);
            let in_wq: Vec<u64> = d.outstanding[..upto]
                .iter()
                .filter(|&&(sub, done)| sub <= t && done > t)
                .map(|&(_, done)| done)
                .collect();
            if in_wq.len() < wq_size {
                break;
            }
            t = in_wq.into_iter().min().expect("a full WQ");
        }
        let submitted = t + self.costs.submit_ns;
        let (e, start) = d
            .engine_busy
            .iter()
            .map(|busy| first_gap(busy, submitted, service))
            .enumerate()
            .min_by_key(|&(i, start)| (start, i))
            .expect("engines_per_device >= 1");
        let done = start + service;
        let busy = &mut d.engine_busy[e];
        let at = busy.partition_point(|&(s0, _)| s0 < start);
        busy.insert(at, (start, done));
        let at = d.outstanding.partition_point(|&(s0, _)| s0 < submitted);
        d.outstanding.insert(at, (submitted, done));
        // Bounded memory: forget the oldest bookings (a CPU is never that far behind).
        for list in d
            .engine_busy
            .iter_mut()
            .chain(std::iter::once(&mut d.outstanding))
        {
            if list.len() > CALENDAR_MAX {
                list.drain(..CALENDAR_MAX / 2);
            }
        }
        let s = &mut d.stats;
        s.busy_ns += service;
        let waited = (t - t0) + (start - submitted);
        s.queue_wait_ns += waited;
        match op {
            IaaOp::Compress => {
                s.comp_calls += 1;
                s.comp_bytes += bytes as u64;
            }
            IaaOp::Decompress => {
                s.decomp_calls += 1;
                s.decomp_bytes += bytes as u64;
                if verify {
                    s.verify_calls += 1;
                }
            }
        }
        (submitted, done, waited)
    }

    /// The CPU has seen a compress complete at `t`: verify it synchronously if configured.
    /// Returns the time the CPU is done with the job.
    fn finish(&mut self, dev: usize, t: u64, op: IaaOp, bytes: u32, wait: &mut u64) -> u64 {
        let t = t + self.costs.poll_ns;
        if op == IaaOp::Compress && self.config.verify_compress {
            let (_, done, waited) = self.enqueue(dev, t, IaaOp::Decompress, bytes, true);
            *wait += waited;
            done + self.costs.poll_ns
        } else {
            t
        }
    }

    fn run(
        &mut self,
        now_ns: u64,
        cpu: u32,
        op: IaaOp,
        pages: u32,
        page_bytes: u32,
        mode: IaaMode,
    ) -> Result<IaaTiming, IaaError> {
        let dev = self.device_of_cpu(cpu)? as usize;
        let batch = match mode {
            IaaMode::Sync => 1,
            IaaMode::Batch { batch_size } => {
                if !(1..=IAA_CRYPTO_MAX_BATCH_SIZE).contains(&batch_size) {
                    return Err(IaaError::BadBatch(batch_size));
                }
                batch_size
            }
        };
        let mut t = now_ns;
        let mut wait = 0u64;
        let mut left = pages;
        let mut inflight: Vec<u64> = Vec::with_capacity(batch as usize);
        while left > 0 {
            let n = left.min(batch);
            inflight.clear();
            for _ in 0..n {
                let (sub, done, waited) = self.enqueue(dev, t, op, page_bytes, false);
                wait += waited;
                // The next descriptor is filled once this one is submitted.
                t = sub;
                inflight.push(done);
            }
            // Poll the sub-batch: each completion is handled (and verified) as it is found.
            inflight.sort_unstable();
            for &done in &inflight {
                t = t.max(done);
                t = self.finish(dev, t, op, page_bytes, &mut wait);
            }
            left -= n;
        }
        Ok(IaaTiming {
            cpu_busy_ns: t - now_ns,
            done_at_ns: t,
            queue_wait_ns: wait,
            device: dev as u32,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iaa(verify: bool) -> Iaa {
        let cost = CostModel::profile("vm-6.18-2cpu").unwrap();
        Iaa::new(
            IaaConfig {
                verify_compress: verify,
                ..IaaConfig::default()
            },
            IaaCosts::from_cost(&cost),
        )
        .unwrap()
    }

    #[test]
    fn iaa_cpu_to_device_map() {
        let d = iaa(false);
        // 56 CPUs per socket over 4 devices: 14 each.
        assert_eq!(d.device_of_cpu(0).unwrap(), 0);
        assert_eq!(d.device_of_cpu(13).unwrap(), 0);
        assert_eq!(d.device_of_cpu(14).unwrap(), 1);
        assert_eq!(d.device_of_cpu(55).unwrap(), 3);
        assert_eq!(d.device_of_cpu(56).unwrap(), 4);
        assert!(d.device_of_cpu(112).is_err());
    }

    #[test]
    fn iaa_batch_of_8_matches_the_cited_p50() {
        // 8 x 4 KiB, async polling, no verification: cited p50 5,589 ns (v6 cover letter).
        let mut d = iaa(false);
        let t = d
            .submit_compress(0, 0, 8, 4096, IaaMode::Batch { batch_size: 8 })
            .unwrap();
        assert!((5279..=5900).contains(&t.cpu_busy_ns), "{t:?}");
    }
}
