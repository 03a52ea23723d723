//! Block devices behind swap: a RAM disk (brd: the submitter copies synchronously), zram (the
//! submitter compresses synchronously), an SSD (also a swap file or loop device) and a
//! rotational disk (asynchronous, behind a request queue: hw/blk_mq.rs, timed by a profile,
//! hw/blockdev_profile.rs).

use super::blk_limits::QueueLimits;
use super::blk_mq::{Dir, RequestQueue};
use super::blk_wbt::Wbt;
use super::blockdev_profile;
use super::membw::{SharedBandwidth, Stream};
use super::ssd_ftl::{Ftl, FtlStats};
use crate::cpu_cost::CpuCost;
use crate::engine::Ctx;
use crate::scenario::{DeviceProfile, SwapDeviceKind, SwapDeviceSpec, PAGE_SIZE};
use serde::Serialize;

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct BlockDevStats {
    pub write_requests: u64,
    pub write_bytes: u64,
    pub read_requests: u64,
    pub read_bytes: u64,
    pub discard_requests: u64,
    /// The request queue of an asynchronous device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue: Option<super::blk_mq::QueueStats>,
    /// With `erase_block` set: the flash translation layer's write amplification.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ftl: Option<FtlStats>,
}

pub struct BlockDevice {
    pub kind: SwapDeviceKind,
    /// Per request and bandwidth of a synchronous device (brd, zram).
    pub latency_ns: u64,
    pub bandwidth_bytes_per_s: u64,
    /// The request queue of an asynchronous one.
    pub queue: Option<RequestQueue>,
    ftl: Option<Ftl>,
    pub stats: BlockDevStats,
}

/// When a submitted request is done.
pub enum Completion {
    /// Done when submission returns (the CPU did the work: brd, zram).
    Sync,
    /// Done at this time; the folio stays under writeback until then.
    At(u64),
}

impl BlockDevice {
    /// Defaults per kind. Ramdisk: a 4 KiB copy at half the store rate of the 2M fault fit
    /// (0.21 µs per 4 KiB stored -> ~0.42 µs copied; measured 0.37-0.41 µs, docs/membw.md) plus
    /// ~0.5 µs of brd page lookup/insert per request (estimate). zram: per request only (bio
    /// and zram_submit_bio), split of fit: MADV_PAGEOUT to zram costs 6.1 µs per extra 4 KiB
    /// page (`foliosim calibrate`, pageout_zram_*); that slope is the driver's per-page work
    /// (mm/swap_devstore.rs), this the intercept's device share. No bandwidth: the CPU is the
    /// device. The others: a request queue timed by the spec's profile.
    pub fn new(spec: &SwapDeviceSpec) -> BlockDevice {
        let (latency_ns, bandwidth, queue) = match spec.kind {
            SwapDeviceKind::Ramdisk => (500, 9_750_000_000, None),
            SwapDeviceKind::Zram => (500, u64::MAX, None),
            _ => (0, 0, Some(request_queue(spec))),
        };
        BlockDevice {
            kind: spec.kind,
            latency_ns: spec.latency_ns.unwrap_or(latency_ns),
            bandwidth_bytes_per_s: spec.bandwidth_bytes_per_s.unwrap_or(bandwidth),
            queue,
            ftl: spec
                .erase_block
                .map(|eb| Ftl::new(spec.size.pages(), (eb.0 / PAGE_SIZE) as u32)),
            stats: BlockDevStats::default(),
        }
    }

    pub fn synchronous_io(&self) -> bool {
        matches!(self.kind, SwapDeviceKind::Ramdisk | SwapDeviceKind::Zram)
    }

    /// Does the driver implement block_device_operations.swap_slot_free_notify (told of every
    /// freed slot so it can drop the slot's data)? Only zram does (zram_slot_free_notify).
    pub fn has_slot_free_notify(&self) -> bool {
        self.kind == SwapDeviceKind::Zram
    }

    pub fn solidstate(&self) -> bool {
        self.kind != SwapDeviceKind::Hdd
    }

    fn transfer_ns(&self, bytes: u64) -> u64 {
        (bytes as u128 * 1_000_000_000 / self.bandwidth_bytes_per_s as u128) as u64
    }

    fn submit(
        &mut self,
        ctx: &mut Ctx,
        membw: &mut SharedBandwidth,
        dir: Dir,
        pos: Option<u64>,
        bytes: u64,
    ) -> Completion {
        if self.kind == SwapDeviceKind::Ramdisk {
            // brd: the submitting CPU copies the data, reading and writing every byte.
            ctx.spend(CpuCost::BlockRequest, self.latency_ns);
            membw.transfer(
                ctx,
                Stream::RamdiskCopy,
                2.0 * bytes as f64,
                self.transfer_ns(bytes),
            );
            return Completion::Sync;
        }
        let Some(queue) = &mut self.queue else {
            // zram: the per-page work (compression, zsmalloc) is the driver's, charged by
            // mm/swap_devstore.rs per page and content; the device adds its per-request cost.
            ctx.spend(CpuCost::BlockRequest, self.latency_ns);
            return Completion::Sync;
        };
        let done_ns = queue.submit(ctx, dir, pos, bytes);
        self.stats.queue = Some(queue.stats.clone());
        Completion::At(done_ns)
    }

    /// When every request submitted so far has completed.
    pub fn idle_at_ns(&self) -> u64 {
        self.queue.as_ref().map_or(0, |q| q.idle_at_ns())
    }

    /// Write `bytes` at swap slot `slot`.
    pub fn write(
        &mut self,
        ctx: &mut Ctx,
        membw: &mut SharedBandwidth,
        slot: u64,
        bytes: u64,
    ) -> Completion {
        self.stats.write_requests += 1;
        self.stats.write_bytes += bytes;
        if let Some(ftl) = &mut self.ftl {
            ftl.write(slot, bytes / PAGE_SIZE);
            self.stats.ftl = Some(ftl.stats.clone());
        }
        self.submit(ctx, membw, Dir::Write, Some(slot), bytes)
    }

    /// Discard (TRIM) `nr_slots` from `slot`; the worker issues it, nobody waits.
    pub fn discard(&mut self, slot: u64, nr_slots: u64) {
        self.stats.discard_requests += 1;
        if let Some(ftl) = &mut self.ftl {
            ftl.trim(slot, nr_slots);
            self.stats.ftl = Some(ftl.stats.clone());
        }
    }

    pub fn read(&mut self, ctx: &mut Ctx, membw: &mut SharedBandwidth, bytes: u64) -> Completion {
        self.stats.read_requests += 1;
        self.stats.read_bytes += bytes;
        self.submit(ctx, membw, Dir::Read, None, bytes)
    }
}

/// The request queue of an asynchronous device: its profile (default by kind), the spec's
/// overrides of latency and bandwidth (both directions; no per-request cost then, as before
/// profiles), its queue limits, nr_requests and wbt_lat_usec (default by the profile's
/// rotational flag).
fn request_queue(spec: &SwapDeviceSpec) -> RequestQueue {
    let profile = spec.profile.unwrap_or(match spec.kind {
        SwapDeviceKind::Hdd => DeviceProfile::Hdd,
        _ => DeviceProfile::VirtioBlkVm,
    });
    let mut t = blockdev_profile::timings(profile);
    for d in [&mut t.read, &mut t.write] {
        if let Some(ns) = spec.latency_ns {
            d.latency_ns = ns;
            d.per_request_ns = 0;
        }
        if let Some(bw) = spec.bandwidth_bytes_per_s {
            d.bandwidth_bytes_per_s = bw;
        }
    }
    let nr_requests = spec.nr_requests.unwrap_or(t.nr_requests).max(1);
    let min_lat_ns = spec
        .wbt_lat_usec
        .map_or(Wbt::default_min_lat_ns(t.rotational), |us| us * 1000);
    let wbt = Wbt::new(min_lat_ns, nr_requests, t.write_cache);
    RequestQueue::new(
        nr_requests,
        queue_limits(spec, t.limits),
        t.read,
        t.write,
        wbt,
    )
}

/// The profile's max_sectors_kb, max_segments and max_segment_size, each overridable.
fn queue_limits(spec: &SwapDeviceSpec, profile: QueueLimits) -> QueueLimits {
    QueueLimits {
        max_sectors_bytes: spec
            .max_sectors_kb
            .map_or(profile.max_sectors_bytes, |kb| kb << 10),
        max_segments: spec.max_segments.unwrap_or(profile.max_segments),
        max_segment_bytes: spec.max_segment_size.unwrap_or(profile.max_segment_bytes),
    }
}
