//! The host snapshot file (`foliosim snapshot --live`): /proc/buddyinfo, /proc/pagetypeinfo,
//! /proc/meminfo and /proc/zoneinfo as the kernel prints them, each after a `== /proc/<name> ==`
//! line. Every node and zone of the host is summed: the model's node has one zone.
//! Errors name the file, the line and the field.

use crate::mm::page_alloc::buddy::NR_PAGE_ORDERS;
use crate::mm::page_alloc::migratetype::MIGRATE_TYPES;
use crate::mm::page_alloc::MigrateType;

/// What the loader takes from a host: its free blocks by type and order, its pageblocks by
/// type, its managed pages, and meminfo's MemTotal / MemFree for the checks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostSnapshot {
    /// pagetypeinfo "Free pages count per migrate type at order": blocks, per type and order.
    pub free_blocks: [[u64; NR_PAGE_ORDERS]; MIGRATE_TYPES],
    /// pagetypeinfo "Number of blocks type": pageblocks per type.
    pub nr_pageblocks: [u64; MIGRATE_TYPES],
    /// zoneinfo: the zones' managed pages, summed.
    pub managed_pages: u64,
    pub mem_total_kb: u64,
    pub mem_free_kb: u64,
}

const SECTIONS: [&str; 4] = ["buddyinfo", "pagetypeinfo", "meminfo", "zoneinfo"];

/// A parse error: `file:line: field: what`.
fn err(file: &str, line: usize, field: &str, what: impl std::fmt::Display) -> String {
    format!("{file}:{line}: {field}: {what}")
}

/// The model's type for a host's pagetypeinfo name (CMA has no type of its own in the model:
/// its blocks hold movable pages only, so they count as Movable).
fn migratetype(name: &str) -> Option<MigrateType> {
    Some(match name {
        "Unmovable" => MigrateType::Unmovable,
        "Movable" | "CMA" => MigrateType::Movable,
        "Reclaimable" => MigrateType::Reclaimable,
        "HighAtomic" => MigrateType::HighAtomic,
        "Isolate" => MigrateType::Isolate,
        _ => return None,
    })
}

fn numbers(file: &str, n: usize, field: &str, text: &str) -> Result<Vec<u64>, String> {
    text.split_whitespace()
        .map(|w| {
            w.parse::<u64>()
                .map_err(|_| err(file, n, field, format!("{w:?} is not a count")))
        })
        .collect()
}

impl HostSnapshot {
    /// Parse the text of snapshot `file` (the name is for the errors only).
    pub fn parse(file: &str, text: &str) -> Result<HostSnapshot, String> {
        let mut s = HostSnapshot::default();
        let mut seen = [false; 4];
        let mut section = None;
        let mut block_types: Vec<MigrateType> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let n = i + 1;
            if let Some(name) = line
                .strip_prefix("== /proc/")
                .and_then(|l| l.strip_suffix(" =="))
            {
                let Some(k) = SECTIONS.iter().position(|&x| x == name) else {
                    return Err(err(
                        file,
                        n,
                        "section",
                        format!("{name:?}: allowed buddyinfo, pagetypeinfo, meminfo, zoneinfo"),
                    ));
                };
                seen[k] = true;
                section = Some(k);
                continue;
            }
            match section {
                Some(0) => s.buddyinfo_line(file, n, line)?,
                Some(1) => s.pagetypeinfo_line(file, n, line, &mut block_types)?,
                Some(2) => s.meminfo_line(file, n, line)?,
                Some(3) => s.zoneinfo_line(file, n, line)?,
                _ if line.trim().is_empty() || line.starts_with('#') => {}
                _ => {
                    return Err(err(
                        file,
                        n,
                        "section",
                        "text before the first == /proc/<name> == line",
                    ))
                }
            }
        }
        if let Some(k) = seen.iter().position(|&x| !x) {
            return Err(err(
                file,
                text.lines().count(),
                SECTIONS[k],
                "section missing",
            ));
        }
        s.check(file, text.lines().count())?;
        Ok(s)
    }

    /// buddyinfo: only checked to have the model's number of orders.
    fn buddyinfo_line(&mut self, file: &str, n: usize, line: &str) -> Result<(), String> {
        let Some((_, counts)) = line.split_once("zone") else {
            return Ok(());
        };
        let counts = counts
            .split_whitespace()
            .skip(1)
            .collect::<Vec<_>>()
            .join(" ");
        let orders = numbers(file, n, "buddyinfo", &counts)?.len();
        if orders != NR_PAGE_ORDERS {
            return Err(err(file, n, "buddyinfo", format!("{orders} orders, the model has {NR_PAGE_ORDERS} (MAX_PAGE_ORDER 10, 4 KiB pages)")));
        }
        Ok(())
    }

    fn pagetypeinfo_line(
        &mut self,
        file: &str,
        n: usize,
        line: &str,
        block_types: &mut Vec<MigrateType>,
    ) -> Result<(), String> {
        if let Some(names) = line.strip_prefix("Number of blocks type") {
            *block_types = names
                .split_whitespace()
                .map(|w| {
                    migratetype(w).ok_or_else(|| {
                        err(
                            file,
                            n,
                            "pagetypeinfo.blocks",
                            format!("unknown type {w:?}"),
                        )
                    })
                })
                .collect::<Result<_, _>>()?;
            return Ok(());
        }
        if !line.starts_with("Node") {
            return Ok(());
        }
        if let Some((_, rest)) = line.split_once(", type") {
            let mut words = rest.split_whitespace();
            let name = words.next().unwrap_or("");
            let mt = migratetype(name).ok_or_else(|| {
                err(
                    file,
                    n,
                    "pagetypeinfo.free",
                    format!("unknown type {name:?}"),
                )
            })?;
            let counts = numbers(
                file,
                n,
                "pagetypeinfo.free",
                &words.collect::<Vec<_>>().join(" "),
            )?;
            if counts.len() != NR_PAGE_ORDERS {
                return Err(err(
                    file,
                    n,
                    "pagetypeinfo.free",
                    format!("{} orders, the model has {NR_PAGE_ORDERS}", counts.len()),
                ));
            }
            for (o, c) in counts.into_iter().enumerate() {
                self.free_blocks[mt as usize][o] += c;
            }
        } else if !block_types.is_empty() {
            // "Node 0, zone   Normal    60  10401 ...": after the zone's name.
            let rest = line.split_once("zone").map_or("", |(_, r)| r);
            let counts = numbers(
                file,
                n,
                "pagetypeinfo.blocks",
                &rest
                    .split_whitespace()
                    .skip(1)
                    .collect::<Vec<_>>()
                    .join(" "),
            )?;
            if counts.len() != block_types.len() {
                return Err(err(
                    file,
                    n,
                    "pagetypeinfo.blocks",
                    format!("{} counts for {} types", counts.len(), block_types.len()),
                ));
            }
            for (mt, c) in block_types.iter().zip(counts) {
                self.nr_pageblocks[*mt as usize] += c;
            }
        }
        Ok(())
    }

    fn meminfo_line(&mut self, file: &str, n: usize, line: &str) -> Result<(), String> {
        let Some((key, value)) = line.split_once(':') else {
            return Ok(());
        };
        let slot = match key {
            "MemTotal" => &mut self.mem_total_kb,
            "MemFree" => &mut self.mem_free_kb,
            _ => return Ok(()),
        };
        let kb = value.trim().trim_end_matches("kB").trim();
        *slot = kb.parse().map_err(|_| {
            err(
                file,
                n,
                &format!("meminfo.{key}"),
                format!("{kb:?} is not a size in kB"),
            )
        })?;
        Ok(())
    }

    fn zoneinfo_line(&mut self, file: &str, n: usize, line: &str) -> Result<(), String> {
        if let Some(v) = line.trim_start().strip_prefix("managed") {
            let v = v.trim();
            self.managed_pages += v.parse::<u64>().map_err(|_| {
                err(
                    file,
                    n,
                    "zoneinfo.managed",
                    format!("{v:?} is not a page count"),
                )
            })?;
        }
        Ok(())
    }

    /// The sections agree: pages managed and pageblocks exist, the free blocks fit in them.
    fn check(&self, file: &str, last: usize) -> Result<(), String> {
        if self.managed_pages == 0 {
            return Err(err(
                file,
                last,
                "zoneinfo.managed",
                "no zone has managed pages",
            ));
        }
        if self.nr_pageblocks.iter().sum::<u64>() == 0 {
            return Err(err(
                file,
                last,
                "pagetypeinfo.blocks",
                "no \"Number of blocks type\" counts",
            ));
        }
        if self.mem_total_kb < self.managed_pages * 4 {
            return Err(err(
                file,
                last,
                "meminfo.MemTotal",
                format!(
                    "{} kB, less than zoneinfo's {} managed pages",
                    self.mem_total_kb, self.managed_pages
                ),
            ));
        }
        if self.free_pages() > self.managed_pages {
            return Err(err(
                file,
                last,
                "pagetypeinfo.free",
                format!(
                    "{} free pages, more than the {} managed",
                    self.free_pages(),
                    self.managed_pages
                ),
            ));
        }
        Ok(())
    }

    /// Pages on the host's free lists (pagetypeinfo).
    pub fn free_pages(&self) -> u64 {
        self.free_blocks
            .iter()
            .flat_map(|t| t.iter().enumerate().map(|(o, &c)| c << o))
            .sum()
    }
}
