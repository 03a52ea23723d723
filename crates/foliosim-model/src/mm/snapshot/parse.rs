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

/// A zone's name in buddyinfo and pagetypeinfo: "Node 0, zone   Normal" as (0, "Normal").
type ZoneKey = (String, String);

/// pagetypeinfo prints a free count above 100000 as ">100000" (pagetypeinfo_showfree_print);
/// such a count is buddyinfo's for the zone and order less the other types'.
const CAPPED: u64 = 100_000;

/// The parser's state across lines: the block-type columns and the zones' buddyinfo counts
/// and capped pagetypeinfo counts (type, order, line) still to fill.
#[derive(Default)]
struct Pending {
    block_types: Vec<MigrateType>,
    buddyinfo: std::collections::BTreeMap<ZoneKey, Vec<u64>>,
    zone_free: std::collections::BTreeMap<ZoneKey, [[u64; NR_PAGE_ORDERS]; MIGRATE_TYPES]>,
    capped: Vec<(ZoneKey, MigrateType, usize, usize)>,
}

/// The zone of a "Node 0, zone   Normal<rest>" line, and the rest.
fn zone_key(line: &str) -> Option<(ZoneKey, &str)> {
    let (node, rest) = line.strip_prefix("Node")?.split_once(", zone")?;
    let rest = rest.trim_start();
    let end = rest
        .find(|c: char| c.is_whitespace() || c == ',')
        .unwrap_or(rest.len());
    Some((
        (node.trim().to_string(), rest[..end].to_string()),
        &rest[end..],
    ))
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

/// buddyinfo: each zone's free blocks per order (for the capped pagetypeinfo counts).
fn buddyinfo_line(file: &str, n: usize, line: &str, p: &mut Pending) -> Result<(), String> {
    let Some((zone, counts)) = zone_key(line) else {
        return Ok(());
    };
    let counts = numbers(file, n, "buddyinfo", counts)?;
    if counts.len() != NR_PAGE_ORDERS {
        return Err(err(
            file,
            n,
            "buddyinfo",
            format!(
                "{} orders, the model has {NR_PAGE_ORDERS} (MAX_PAGE_ORDER 10, 4 KiB pages)",
                counts.len()
            ),
        ));
    }
    p.buddyinfo.insert(zone, counts);
    Ok(())
}

impl HostSnapshot {
    /// Parse the text of snapshot `file` (the name is for the errors only).
    pub fn parse(file: &str, text: &str) -> Result<HostSnapshot, String> {
        let mut s = HostSnapshot::default();
        let mut seen = [false; 4];
        let mut section = None;
        let mut pending = Pending::default();
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
                Some(0) => buddyinfo_line(file, n, line, &mut pending)?,
                Some(1) => s.pagetypeinfo_line(file, n, line, &mut pending)?,
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
        s.fill_capped(file, &pending)?;
        s.check(file, text.lines().count())?;
        Ok(s)
    }

    /// Each ">100000" count from buddyinfo: the zone's free blocks of that order less the
    /// other types' (the files are read at different instants: at least 100000).
    fn fill_capped(&mut self, file: &str, p: &Pending) -> Result<(), String> {
        for (zone, mt, order, n) in &p.capped {
            let Some(total) = p.buddyinfo.get(zone).map(|b| b[*order]) else {
                return Err(err(
                    file,
                    *n,
                    "pagetypeinfo.free",
                    format!(
                        ">100000 for zone {} of node {}, which buddyinfo lacks",
                        zone.1, zone.0
                    ),
                ));
            };
            let others: u64 = p.zone_free[zone].iter().map(|t| t[*order]).sum();
            self.free_blocks[*mt as usize][*order] += total.saturating_sub(others).max(CAPPED);
        }
        Ok(())
    }

    fn pagetypeinfo_line(
        &mut self,
        file: &str,
        n: usize,
        line: &str,
        p: &mut Pending,
    ) -> Result<(), String> {
        if let Some(names) = line.strip_prefix("Number of blocks type") {
            p.block_types = names
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
        let Some((zone, rest)) = zone_key(line) else {
            return Ok(());
        };
        if let Some(rest) = rest.strip_prefix(", type") {
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
            let words: Vec<&str> = words.collect();
            if words.len() != NR_PAGE_ORDERS {
                return Err(err(
                    file,
                    n,
                    "pagetypeinfo.free",
                    format!("{} orders, the model has {NR_PAGE_ORDERS}", words.len()),
                ));
            }
            for (o, w) in words.into_iter().enumerate() {
                if w == ">100000" {
                    p.capped.push((zone.clone(), mt, o, n));
                    continue;
                }
                let c = numbers(file, n, "pagetypeinfo.free", w)?[0];
                self.free_blocks[mt as usize][o] += c;
                p.zone_free.entry(zone.clone()).or_default()[mt as usize][o] += c;
            }
        } else if !p.block_types.is_empty() {
            let counts = numbers(file, n, "pagetypeinfo.blocks", rest)?;
            if counts.len() != p.block_types.len() {
                return Err(err(
                    file,
                    n,
                    "pagetypeinfo.blocks",
                    format!("{} counts for {} types", counts.len(), p.block_types.len()),
                ));
            }
            for (mt, c) in p.block_types.iter().zip(counts) {
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
