//! Where a scaled host snapshot's pageblocks and free blocks go in a node's zone. The host
//! gives counts only (pagetypeinfo), not addresses: the layout spreads each kind evenly over
//! the zone and places every free block so that its buddy is not a free block of its order, as
//! on the host (such buddies would have merged): an order-10 free block is two whole
//! pageblocks of its type; an order-9 one shares its 4 MiB with a partly used pageblock;
//! smaller ones go in the partly used pageblocks of their type, round-robin, largest first,
//! packed from the pageblock's start with a used page between two of one order that would be
//! buddies.

use super::parse::HostSnapshot;
use crate::mm::page_alloc::buddy::NR_PAGE_ORDERS;
use crate::mm::page_alloc::migratetype::MIGRATE_TYPES;
use crate::mm::page_alloc::{MigrateType, PAGEBLOCK_NR_PAGES};

/// A snapshot's counts scaled to a zone of `nr_pageblocks` pageblocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scaled {
    pub nr_pageblocks: [u64; MIGRATE_TYPES],
    pub free_blocks: [[u64; NR_PAGE_ORDERS]; MIGRATE_TYPES],
}

/// Pageblocks by type in proportion (largest remainder, so they sum to the zone's); free
/// blocks of each type and order by the ratio of the zone's pages to the host's managed
/// pages, rounded to nearest. Isolate (a transient state) counts as Movable.
pub fn scale(s: &HostSnapshot, zone_pages: u64) -> Scaled {
    let fold = |a: &mut [u64; MIGRATE_TYPES]| {
        a[MigrateType::Movable as usize] += std::mem::take(&mut a[MigrateType::Isolate as usize]);
    };
    let mut host_blocks = s.nr_pageblocks;
    fold(&mut host_blocks);
    let total: u64 = host_blocks.iter().sum();
    let nr = zone_pages / PAGEBLOCK_NR_PAGES as u64;
    let mut blocks = host_blocks.map(|c| c * nr / total);
    let mut rest: Vec<(u64, usize)> = (0..MIGRATE_TYPES)
        .map(|t| (host_blocks[t] * nr % total, t))
        .collect();
    rest.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let short = nr - blocks.iter().sum::<u64>();
    for &(_, t) in rest.iter().take(short as usize) {
        blocks[t] += 1;
    }
    let mut free = [[0u64; NR_PAGE_ORDERS]; MIGRATE_TYPES];
    for (t, row) in s.free_blocks.iter().enumerate() {
        let t = if t == MigrateType::Isolate as usize {
            MigrateType::Movable as usize
        } else {
            t
        };
        for (o, &c) in row.iter().enumerate() {
            free[t][o] += (c * zone_pages + s.managed_pages / 2) / s.managed_pages;
        }
    }
    Scaled {
        nr_pageblocks: blocks,
        free_blocks: free,
    }
}

/// One pageblock of the layout: its type, the free blocks that start in it (offset, order),
/// and whether it is partly used (the second half of an order-10 free block is not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub mt: MigrateType,
    pub holes: Vec<(u32, u32)>,
    pub partial: bool,
}

/// `items` (a count per kind) in an even spread: the j-th of a kind with c items sits at
/// (2j + 1) / 2c of the way; ties go to the lower kind.
fn spread(counts: &[u64]) -> Vec<usize> {
    let mut keys: Vec<(u64, u64, usize)> = Vec::new();
    for (kind, &c) in counts.iter().enumerate() {
        keys.extend((0..c).map(|j| (2 * j + 1, 2 * c, kind)));
    }
    keys.sort_by(|a, b| {
        (a.0 as u128 * b.1 as u128)
            .cmp(&(b.0 as u128 * a.1 as u128))
            .then(a.2.cmp(&b.2))
    });
    keys.into_iter().map(|k| k.2).collect()
}

/// The pageblocks of the zone in pfn order. Order-9 and order-10 free blocks a type has no
/// room for (scaling rounds) stay in use; smaller ones that do not fit are an error.
pub fn layout(s: &Scaled) -> Result<Vec<Block>, String> {
    let mt_of = |t: usize| MigrateType::from_index(t as u8);
    let (mut f10, mut f9, mut part) = (
        [0u64; MIGRATE_TYPES],
        [0u64; MIGRATE_TYPES],
        [0u64; MIGRATE_TYPES],
    );
    for t in 0..MIGRATE_TYPES {
        let n = s.nr_pageblocks[t];
        f10[t] = s.free_blocks[t][10].min(n / 2);
        f9[t] = s.free_blocks[t][9].min(n - 2 * f10[t]);
        part[t] = n - 2 * f10[t] - f9[t];
    }
    // Each order-9 free block needs a partly used buddy pageblock.
    let spare = part.iter().sum::<u64>();
    let mut over = f9.iter().sum::<u64>().saturating_sub(spare / 2);
    for t in (0..MIGRATE_TYPES).rev() {
        let cut = over.min(f9[t]);
        (f9[t], part[t], over) = (f9[t] - cut, part[t] + cut, over - cut);
    }
    let (mut free10, mut free9, mut parts) = (
        spread(&f10).into_iter(),
        spread(&f9).into_iter(),
        spread(&part).into_iter(),
    );
    let (n10, n9, np) = (
        f10.iter().sum::<u64>(),
        f9.iter().sum::<u64>(),
        part.iter().sum::<u64>(),
    );
    let pairs = (np - n9) / 2;
    let mut blocks = Vec::new();
    let partial = |t: usize| Block {
        mt: mt_of(t),
        holes: Vec::new(),
        partial: true,
    };
    let free = |t: usize, holes: Vec<(u32, u32)>| Block {
        mt: mt_of(t),
        holes,
        partial: false,
    };
    for kind in spread(&[n10, n9, pairs]) {
        match kind {
            0 => {
                let t = free10.next().expect("counted");
                blocks.push(free(t, vec![(0, 10)]));
                blocks.push(free(t, Vec::new()));
            }
            1 => {
                let t = free9.next().expect("counted");
                blocks.push(free(t, vec![(0, 9)]));
                blocks.push(partial(parts.next().expect("counted")));
            }
            _ => {
                blocks.push(partial(parts.next().expect("counted")));
                blocks.push(partial(parts.next().expect("counted")));
            }
        }
    }
    blocks.extend(parts.map(partial));
    place_small_holes(s, &mut blocks)?;
    Ok(blocks)
}

/// Free blocks of order 0..=8 into their type's partly used pageblocks, largest first,
/// round-robin, each at the next aligned offset of its pageblock whose lower buddy is not a
/// free block of its order (one page is left in use between two such, so they cannot merge;
/// a larger free block below is no buddy of it).
fn place_small_holes(s: &Scaled, blocks: &mut [Block]) -> Result<(), String> {
    for t in 0..MIGRATE_TYPES {
        let mine: Vec<usize> = (0..blocks.len())
            .filter(|&i| blocks[i].mt as usize == t && blocks[i].partial)
            .collect();
        let mut cursor = vec![0u32; mine.len()];
        let mut next = 0;
        for order in (0..9u32).rev() {
            let size = 1u32 << order;
            for _ in 0..s.free_blocks[t][order as usize] {
                let at = |k: usize| {
                    let c = cursor[k].next_multiple_of(size);
                    let merges = (c >> order) & 1 == 1
                        && blocks[mine[k]].holes.last() == Some(&(c - size, order));
                    if merges {
                        c + size
                    } else {
                        c
                    }
                };
                let fit = (0..mine.len())
                    .map(|k| (next + k) % mine.len())
                    .find(|&k| at(k) + size <= PAGEBLOCK_NR_PAGES);
                let Some(k) = fit else {
                    return Err(format!(
                        "the {:?} free blocks of order < 9 do not fit in its {} partly used pageblocks",
                        MigrateType::from_index(t as u8),
                        mine.len()
                    ));
                };
                let c = at(k);
                blocks[mine[k]].holes.push((c, order));
                cursor[k] = c + size;
                next = (k + 1) % mine.len();
            }
        }
    }
    Ok(())
}
