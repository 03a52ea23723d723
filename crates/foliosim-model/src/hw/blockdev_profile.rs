//! Device profiles: each direction's timing (hw/blk_mq.rs) derived from the three figures a
//! datasheet or fio gives: 4 KiB random IOPS at queue depth 1 and at 32, and the sequential
//! bandwidth. With a device that serves one request at a time and overlaps completion
//! latency: 1 / IOPS(QD32) = per-request cost + 4 KiB / bandwidth, and
//! 1 / IOPS(QD1) = that + the completion latency.

use super::blk_limits::QueueLimits;
use super::blk_mq::DirTiming;
use crate::scenario::DeviceProfile;

/// What a profile gives the request queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProfileTimings {
    pub read: DirTiming,
    pub write: DirTiming,
    /// nr_requests: the default tag count a submitter can take.
    pub nr_requests: u32,
    /// max_sectors_kb, max_segments, max_segment_size.
    pub limits: QueueLimits,
    /// /sys/block/<dev>/queue/rotational: picks wbt's latency target (hw/blk_wbt.rs).
    pub rotational: bool,
    /// /sys/block/<dev>/queue/write_cache is "write back" (QUEUE_FLAG_WC): wbt wakes its
    /// sleeping writers only once no tracked write is in flight (hw/blk_wbt.rs).
    pub write_cache: bool,
}

/// Published figures of one direction.
#[derive(Debug, Clone, Copy)]
struct Figures {
    iops_qd1: u64,
    iops_qd32: u64,
    bandwidth_bytes_per_s: u64,
}

impl Figures {
    fn timing(self) -> DirTiming {
        let ns_4k_qd32 = 1_000_000_000 / self.iops_qd32;
        let ns_4k_qd1 = 1_000_000_000 / self.iops_qd1;
        let transfer_4k = 4096 * 1_000_000_000 / self.bandwidth_bytes_per_s;
        DirTiming {
            latency_ns: ns_4k_qd1.saturating_sub(ns_4k_qd32),
            per_request_ns: ns_4k_qd32.saturating_sub(transfer_4k),
            bandwidth_bytes_per_s: self.bandwidth_bytes_per_s,
        }
    }
}

const MB: u64 = 1_000_000;
/// BLK_DEF_MAX_SECTORS_CAP (2560 sectors before 6.17): the kernel's cap on max_sectors_kb when
/// the device allows more. 6.17 raised it to 4 MiB (9b8b84879d4a "block: Increase
/// BLK_DEF_MAX_SECTORS_CAP"); the profiles keep the older figure.
const BLK_DEF_MAX_BYTES: u64 = 1280 << 10;
/// max_segment_size without a device limit: the virt boundary's or the DMA layer's UINT_MAX.
const UNLIMITED_SEGMENT_BYTES: u64 = u32::MAX as u64;

/// nvme-pci: NVME_MAX_SEGS (128, drivers/nvme/host/pci.c as of 6.12-6.16; not checked against
/// 6.18), segments unbounded in size (virt_boundary_mask set).
const NVME_LIMITS: QueueLimits = QueueLimits {
    max_sectors_bytes: BLK_DEF_MAX_BYTES,
    max_segments: 128,
    max_segment_bytes: UNLIMITED_SEGMENT_BYTES,
};

/// A SATA disk on AHCI: sg_tablesize AHCI_MAX_SG (168, drivers/ata/ahci.h) and the SCSI
/// host's default max_segment_size, BLK_MAX_SEGMENT_SIZE (64 KiB).
const AHCI_LIMITS: QueueLimits = QueueLimits {
    max_sectors_bytes: BLK_DEF_MAX_BYTES,
    max_segments: 168,
    max_segment_bytes: 64 << 10,
};

/// This VM's vda: `cat /sys/block/vda/queue/{max_sectors_kb,max_segments,max_segment_size}`
/// 4096, 254 (virtio-blk's seg_max from the host, here the virtqueue size less 2) and
/// 4294967295 (2026-11-28).
const VIRTIO_VM_LIMITS: QueueLimits = QueueLimits {
    max_sectors_bytes: 4096 << 10,
    max_segments: 254,
    max_segment_bytes: UNLIMITED_SEGMENT_BYTES,
};

pub fn timings(profile: DeviceProfile) -> ProfileTimings {
    let (read, write, nr_requests, limits) = match profile {
        // Samsung 980 1TB (PCIe 3.0 NVMe), Samsung's figures as quoted in
        // https://www.guru3d.com/articles-pages/samsung-980-1tb-nvme-ssd-review,2.html:
        // 3500/3000 MB/s sequential, 4K QD1 17k/54k IOPS, QD32 500k/480k IOPS (read/write).
        // nr_requests 1023: the nvme driver's default io_queue_depth (1024) less one, no
        // I/O scheduler on NVMe.
        DeviceProfile::Nvme => (
            Figures {
                iops_qd1: 17_000,
                iops_qd32: 500_000,
                bandwidth_bytes_per_s: 3500 * MB,
            },
            Figures {
                iops_qd1: 54_000,
                iops_qd32: 480_000,
                bandwidth_bytes_per_s: 3000 * MB,
            },
            1023,
            NVME_LIMITS,
        ),
        // SATA: Samsung 870 EVO 1TB, 560/530 MB/s, QD32 98k/88k IOPS
        // (http://www.cdrlabs.com/reviews/samsung-870-evo-1tb-solid-state-drive/print.html);
        // QD1 from the 850 EVO 1TB specification, 10k/40k IOPS (no 870 EVO QD1 figure at hand:
        // an estimate for the 870). nr_requests 64: mq-deadline's twice the 32 NCQ tags.
        DeviceProfile::SataSsd => (
            Figures {
                iops_qd1: 10_000,
                iops_qd32: 98_000,
                bandwidth_bytes_per_s: 560 * MB,
            },
            Figures {
                iops_qd1: 40_000,
                iops_qd32: 88_000,
                bandwidth_bytes_per_s: 530 * MB,
            },
            64,
            AHCI_LIMITS,
        ),
        // A 7200 rpm disk, an estimate: a random 4K access is an average seek (~8.5 ms, a
        // typical desktop-disk datasheet figure) plus half a turn (4.17 ms at 7200 rpm),
        // ~79 IOPS at any depth (one head), 200 MB/s sequential. nr_requests 64 as for SATA.
        DeviceProfile::Hdd => (
            Figures {
                iops_qd1: 79,
                iops_qd32: 79,
                bandwidth_bytes_per_s: 200 * MB,
            },
            Figures {
                iops_qd1: 79,
                iops_qd32: 79,
                bandwidth_bytes_per_s: 200 * MB,
            },
            64,
            AHCI_LIMITS,
        ),
        // This VM's /dev/vda (virtio-blk, ext4), fio with O_DIRECT on a file in /var/tmp
        // (docs/calibration-vm.md "Block device"); nr_requests 256 read from
        // /sys/block/vda/queue.
        DeviceProfile::VirtioBlkVm => (
            Figures {
                iops_qd1: VIRTIO_READ_QD1_IOPS,
                iops_qd32: VIRTIO_READ_QD32_IOPS,
                bandwidth_bytes_per_s: VIRTIO_READ_BYTES_PER_S,
            },
            Figures {
                iops_qd1: VIRTIO_WRITE_QD1_IOPS,
                iops_qd32: VIRTIO_WRITE_QD32_IOPS,
                bandwidth_bytes_per_s: VIRTIO_WRITE_BYTES_PER_S,
            },
            256,
            VIRTIO_VM_LIMITS,
        ),
    };
    ProfileTimings {
        read: read.timing(),
        write: write.timing(),
        nr_requests,
        limits,
        rotational: rotational(profile),
        write_cache: true,
    }
}

// write_cache: this VM's vda reads "write back" (/sys/block/vda/queue/write_cache,
// 2026-11-28). The others are an estimate: SATA and NVMe SSDs and desktop disks ship with
// their volatile write cache enabled, which sd (sd_read_cache_type) and nvme (the VWC bit)
// report as "write back"; a drive with power-loss protection or the cache off would not.

/// Does the queue report itself rotational? A disk does, SSDs do not; this VM's virtio-blk
/// disk does too (/sys/block/vda/queue/rotational reads 1, wbt_lat_usec 75000, 2026-11-28).
fn rotational(profile: DeviceProfile) -> bool {
    match profile {
        DeviceProfile::Nvme | DeviceProfile::SataSsd => false,
        DeviceProfile::Hdd | DeviceProfile::VirtioBlkVm => true,
    }
}

// Measured here (docs/calibration-vm.md "Block device"): fio randread/randwrite, 4k at QD1
// and QD32, 2M at QD32 for the bandwidth.
const VIRTIO_READ_QD1_IOPS: u64 = 8_689;
const VIRTIO_READ_QD32_IOPS: u64 = 31_670;
const VIRTIO_READ_BYTES_PER_S: u64 = 1_309_600_000;
const VIRTIO_WRITE_QD1_IOPS: u64 = 11_613;
const VIRTIO_WRITE_QD32_IOPS: u64 = 33_629;
const VIRTIO_WRITE_BYTES_PER_S: u64 = 448_500_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_gives_back_its_figures() {
        for p in [
            DeviceProfile::Nvme,
            DeviceProfile::SataSsd,
            DeviceProfile::Hdd,
            DeviceProfile::VirtioBlkVm,
        ] {
            let t = timings(p);
            for d in [t.read, t.write] {
                let qd32_ns = d.per_request_ns + 4096 * 1_000_000_000 / d.bandwidth_bytes_per_s;
                assert!(qd32_ns > 0 && d.latency_ns + qd32_ns > 0, "{p:?}");
            }
        }
        let nvme = timings(DeviceProfile::Nvme);
        // 1 / 54k IOPS = 18.5 µs at QD1 for a 4K write.
        let w = nvme.write;
        let qd1 = w.latency_ns + w.per_request_ns + 4096 * 1_000_000_000 / w.bandwidth_bytes_per_s;
        assert!((18_000..19_000).contains(&qd1), "{qd1}");
    }
}
