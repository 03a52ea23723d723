//! What the disk under a swap file or loop device did during a run: write requests, merged
//! bios, bytes and the mean time a write request spent from submission to completion, from
//! /sys/dev/block/MAJ:MIN/stat (Documentation/block/stat.rst). That time decides how far
//! reclaim writes ahead of what it frees (validate's "written, freed by exit" row), and on a
//! shared VM it follows the other guests' and processes' disk load, not the scenario.

use serde::Serialize;
use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};

/// The write half of a block device's stat file at one instant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteStat {
    pub requests: u64,
    pub merges: u64,
    pub sectors: u64,
    /// Milliseconds summed over the write requests, each from submission to completion.
    pub ticks_ms: u64,
}

/// Fields 5-8 of a stat file: write I/Os, write merges, write sectors, write ticks.
pub fn parse_stat(text: &str) -> Option<WriteStat> {
    let f: Vec<u64> = text
        .split_whitespace()
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    Some(WriteStat {
        requests: *f.get(4)?,
        merges: *f.get(5)?,
        sectors: *f.get(6)?,
        ticks_ms: *f.get(7)?,
    })
}

/// `MAJ:MIN` of the device a swap area writes to: a block device itself, or the filesystem's
/// device under a swap file.
pub fn device_of(path: &str) -> Option<String> {
    let m = fs::metadata(path).ok()?;
    let dev = if m.file_type().is_block_device() {
        m.rdev()
    } else {
        m.dev()
    };
    Some(format!("{}:{}", libc::major(dev), libc::minor(dev)))
}

pub fn read(device: &str) -> Option<WriteStat> {
    parse_stat(&fs::read_to_string(format!("/sys/dev/block/{device}/stat")).ok()?)
}

/// A device's writes over a run (all writers', the swap-outs among them).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiskWrites {
    /// `MAJ:MIN`.
    pub device: String,
    pub requests: u64,
    pub merged_bios: u64,
    pub bytes: u64,
    /// Mean time from submission to completion of a write request.
    pub mean_write_ms: f64,
}

impl DiskWrites {
    pub fn between(device: &str, before: WriteStat, after: WriteStat) -> DiskWrites {
        let requests = after.requests.saturating_sub(before.requests);
        let ticks = after.ticks_ms.saturating_sub(before.ticks_ms);
        DiskWrites {
            device: device.to_string(),
            requests,
            merged_bios: after.merges.saturating_sub(before.merges),
            bytes: after.sectors.saturating_sub(before.sectors) * 512,
            mean_write_ms: if requests > 0 {
                ticks as f64 / requests as f64
            } else {
                0.0
            },
        }
    }

    pub fn note(&self) -> String {
        format!(
            "the swap disk {} took {} write request(s) during the run ({} bio(s) merged into them, {} MiB), {:.1} ms each from submission to completion on average",
            self.device,
            self.requests,
            self.merged_bios,
            self.bytes >> 20,
            self.mean_write_ms
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_fields_of_a_stat_line() {
        let line = " 1479949 60148 150744346 3288296 761821 2349788 266242368 4916555 0 566456 \
                    8403746 188919 18 174752616 180309 32536 18584\n";
        let w = parse_stat(line).unwrap();
        assert_eq!(w.requests, 761821);
        assert_eq!(w.merges, 2349788);
        assert_eq!(w.sectors, 266242368);
        assert_eq!(w.ticks_ms, 4916555);
        assert!(parse_stat("1 2 3").is_none());
        assert!(parse_stat("1 2 3 4 x 6 7 8").is_none());
    }

    #[test]
    fn writes_between_two_readings() {
        let a = WriteStat {
            requests: 100,
            merges: 10,
            sectors: 800,
            ticks_ms: 50,
        };
        let b = WriteStat {
            requests: 300,
            merges: 4010,
            sectors: 800 + 2048 * 100,
            ticks_ms: 50 + 2000,
        };
        let d = DiskWrites::between("254:0", a, b);
        assert_eq!((d.requests, d.merged_bios, d.bytes), (200, 4000, 100 << 20));
        assert!((d.mean_write_ms - 10.0).abs() < 1e-9);
        assert!(d.note().contains("254:0 took 200 write request(s)"));
        let none = DiskWrites::between("254:0", a, a);
        assert_eq!(none.mean_write_ms, 0.0);
    }

    #[test]
    fn a_file_is_on_its_filesystems_device() {
        let dir = std::env::temp_dir();
        let dev = device_of(dir.to_str().unwrap()).unwrap();
        assert!(dev.contains(':'), "{dev}");
        assert!(device_of("/nonexistent/foliosim").is_none());
    }
}
