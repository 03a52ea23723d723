//! Block devices behind swap: a RAM disk (brd: the submitter copies synchronously), zram (the
//! submitter compresses synchronously), an SSD (also a swap file or loop device) and a
//! rotational disk (queued: one request at a time at the device's bandwidth plus latency).

use super::membw::{SharedBandwidth, Stream};
use super::ssd_ftl::{Ftl, FtlStats};
use crate::engine::Ctx;
use crate::scenario::{SwapDeviceKind, SwapDeviceSpec, PAGE_SIZE};
use serde::Serialize;

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct BlockDevStats {
    pub write_requests: u64,
    pub write_bytes: u64,
    pub read_requests: u64,
    pub read_bytes: u64,
    pub discard_requests: u64,
    /// With `erase_block` set: the flash translation layer's write amplification.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ftl: Option<FtlStats>,
}

pub struct BlockDevice {
    pub kind: SwapDeviceKind,
    pub latency_ns: u64,
    pub bandwidth_bytes_per_s: u64,
    busy_until_ns: u64,
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
    /// (0.21 µs per 4 KiB stored -> ~0.42 µs copied; measured 0.37-0.41 µs, docs/membw.md) plus ~0.5 µs of brd page lookup/insert per
    /// request (estimate). SSD: the calibration VM's virtio disk (~2 GB/s, ~13k IOPS at QD1 ->
    /// ~77 µs). HDD: a 7200 rpm disk (estimate: 8 ms, 150 MB/s).
    pub fn new(spec: &SwapDeviceSpec) -> BlockDevice {
        let (latency_ns, bandwidth) = match spec.kind {
            SwapDeviceKind::Ramdisk => (500, 9_750_000_000),
            // zram: per request only (bio and zram_submit_bio). split of fit: MADV_PAGEOUT to
            // zram costs 6.1 µs per extra 4 KiB page (`foliosim calibrate`, pageout_zram_*); that
            // slope is the driver's per-page work (mm/swap_devstore.rs), this the intercept's
            // device share. No bandwidth: the CPU is the device.
            SwapDeviceKind::Zram => (500, u64::MAX),
            SwapDeviceKind::Ssd | SwapDeviceKind::File | SwapDeviceKind::Loop => {
                (77_000, 2_000_000_000)
            }
            SwapDeviceKind::Hdd => (8_000_000, 150_000_000),
        };
        BlockDevice {
            kind: spec.kind,
            latency_ns: spec.latency_ns.unwrap_or(latency_ns),
            bandwidth_bytes_per_s: spec.bandwidth_bytes_per_s.unwrap_or(bandwidth),
            busy_until_ns: 0,
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

    fn submit(&mut self, ctx: &mut Ctx, membw: &mut SharedBandwidth, bytes: u64) -> Completion {
        if self.kind == SwapDeviceKind::Ramdisk {
            // brd: the submitting CPU copies the data, reading and writing every byte.
            ctx.spend(self.latency_ns);
            membw.transfer(
                ctx,
                Stream::RamdiskCopy,
                2.0 * bytes as f64,
                self.transfer_ns(bytes),
            );
            return Completion::Sync;
        }
        if self.kind == SwapDeviceKind::Zram {
            // zram: the per-page work (compression, zsmalloc) is the driver's, charged by
            // mm/swap_devstore.rs per page and content; the device adds its per-request cost.
            ctx.spend(self.latency_ns);
            return Completion::Sync;
        }
        let start = self.busy_until_ns.max(ctx.now_ns);
        self.busy_until_ns = start + self.transfer_ns(bytes);
        Completion::At(self.busy_until_ns + self.latency_ns)
    }

    /// When every request submitted so far has completed.
    pub fn idle_at_ns(&self) -> u64 {
        if self.synchronous_io() {
            0
        } else {
            self.busy_until_ns + self.latency_ns
        }
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
        self.submit(ctx, membw, bytes)
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
        self.submit(ctx, membw, bytes)
    }
}
