//! Random user accesses (`Op::Access`): `count` loads or stores at uniformly random pages of a
//! range, costed by the TLB and cache model (hw/tlb_cache.rs) without looping over `count`.
//!
//! Most accesses find their page plainly mapped and cost user time in bulk. The pages that are
//! not ("special": not present, NUMA-hint PROT_NONE, or with a cleared accessed bit) are kept per VMA in a
//! `SpecialSet` with O(1) random pick and removal. Between two special hits the number of plain
//! accesses is geometric with p = specials / pages, so a step is: the plain accesses up to the
//! next special hit, in bulk, then that hit through `access_special` (a fault through
//! handle_mm_fault, as Touch takes it). An Access op costs as many steps as it meets special
//! pages, plus one.
//!
//! A set covers one accessed range of a VMA (a VMA keeps up to `MAX_SETS_PER_VMA`, the least
//! recently used is dropped and rebuilt from the PTEs when needed again). It is a superset,
//! kept lazily: a page enters it wherever the model clears a present PTE (`pte_cleared`,
//! called by zap, reclaim's unmap and the page cache's unmap) and leaves it when an access
//! finds it, whether the page still needs the fault or was mapped meanwhile (a fault of a
//! neighbour mapped a large folio over it, a Touch, khugepaged): such a stale member is a
//! plain access. A range gets its set at its first Access, from its PTEs.
//!
//! Accessed bits: reclaim's folio_referenced clears a folio's (`young_cleared` lists its pages
//! OLD), and the next access to one of them sets it again. Not modelled: a store to a present
//! clean or read-only page (COW, dirtying after swap-in) changes no page state.

use super::folio::{flags, FolioTable};
use super::memory::{handle_mm_fault, VmFault};
use super::mmap::{Pte, Vma};
use super::{Kernel, MmError};
use crate::cpu_cost::CpuCost;
use crate::engine::rng::SimRng;
use crate::engine::Ctx;
use crate::hw::tlb_cache::{HotSet, RandomAccess};

/// Why a page is not plainly mapped: a bit set.
pub type SpecialKinds = u8;
/// The PTE is not present (none, swap, a hole): the access faults.
pub const NOT_PRESENT: SpecialKinds = 1;
/// A NUMA hinting PTE (PROT_NONE, mm/numa_balancing.rs): the access takes a hint fault.
pub const PROT_NONE: SpecialKinds = 2;
/// Reclaim cleared the accessed bit of the folio mapped here (folio_referenced): the access
/// sets it again (the hardware sets the PTE's accessed bit; the model's folio YOUNG flag).
pub const OLD: SpecialKinds = 4;

const NOT_MEMBER: u32 = u32::MAX;
/// Ranges of one VMA with a set; the least recently used goes past this.
const MAX_SETS_PER_VMA: usize = 8;
/// Pages sampled per step for the share of the range mapped by PMDs.
const HUGE_SAMPLES: u32 = 32;

/// The special pages of the range [first, first + nr) of a VMA: members (page indices) in a
/// Vec for a uniform pick and a swap-remove, each page's position and kinds in dense arrays.
#[derive(Debug, Clone)]
pub struct SpecialSet {
    pub first: u32,
    pub nr: u32,
    members: Vec<u32>,
    pos: Vec<u32>,
    kinds: Vec<SpecialKinds>,
    /// Access ops that used it (the least used set of a VMA is dropped first).
    pub last_used: u64,
}

impl SpecialSet {
    pub fn new(first: u32, nr: u32) -> SpecialSet {
        SpecialSet {
            first,
            nr,
            members: Vec::new(),
            pos: vec![NOT_MEMBER; nr as usize],
            kinds: vec![0; nr as usize],
            last_used: 0,
        }
    }

    #[inline]
    pub fn covers(&self, index: u32) -> bool {
        index >= self.first && index - self.first < self.nr
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The kinds of page `index` (0: not a member).
    pub fn kinds(&self, index: u32) -> SpecialKinds {
        self.kinds[(index - self.first) as usize]
    }

    /// Add `kinds` to page `index`.
    pub fn insert(&mut self, index: u32, kinds: SpecialKinds) {
        let i = (index - self.first) as usize;
        if self.pos[i] == NOT_MEMBER {
            self.pos[i] = self.members.len() as u32;
            self.members.push(index);
        }
        self.kinds[i] |= kinds;
    }

    /// Take page `index` out; its kinds.
    pub fn remove(&mut self, index: u32) -> SpecialKinds {
        let i = (index - self.first) as usize;
        let at = self.pos[i];
        if at == NOT_MEMBER {
            return 0;
        }
        let last = self.members.pop().expect("a member");
        if last != index {
            self.members[at as usize] = last;
            self.pos[(last - self.first) as usize] = at;
        }
        self.pos[i] = NOT_MEMBER;
        std::mem::take(&mut self.kinds[i])
    }

    /// A uniformly chosen member.
    pub fn pick(&self, rng: &mut SimRng) -> u32 {
        self.members[rng.below(self.members.len() as u64) as usize]
    }

    /// Positions and kinds agree with the member list.
    pub fn check(&self) -> Result<(), String> {
        for (at, &m) in self.members.iter().enumerate() {
            let i = (m - self.first) as usize;
            if !self.covers(m) || self.pos[i] != at as u32 || self.kinds[i] == 0 {
                return Err(format!("special page {m}: position or kinds wrong"));
            }
        }
        let listed = self.pos.iter().filter(|&&p| p != NOT_MEMBER).count();
        if listed != self.members.len() {
            return Err(format!(
                "{listed} pages have a position, {} are members",
                self.members.len()
            ));
        }
        Ok(())
    }
}

/// What makes a PTE special for an access (0: plainly mapped).
#[inline]
pub fn classify(pte: Pte) -> SpecialKinds {
    if !pte.is_present() {
        NOT_PRESENT
    } else if pte.is_protnone() {
        PROT_NONE
    } else {
        0
    }
}

/// Hook: the model cleared the present PTEs [first, first + nr) of `vma` (zap, unmap for
/// swap-out or page-cache reclaim). Nothing to do for a VMA that was never accessed by Access.
#[inline]
pub fn pte_cleared(vma: &mut Vma, first: u32, nr: u32) {
    for set in vma.special.iter_mut() {
        for index in first.max(set.first)..(first + nr).min(set.first + set.nr) {
            set.insert(index, NOT_PRESENT);
        }
    }
}

/// Hook: reclaim cleared the accessed bit of the anonymous folio at `pfn` (folio_referenced):
/// its pages become OLD in the accessed ranges that hold them, so accesses set it again at
/// a cost proportional to reclaim's work, not to the accesses. Nothing for a folio of a VMA
/// without Access ranges.
#[inline]
pub fn young_cleared(k: &mut Kernel, pfn: u32) {
    if k.access_sets {
        mark_old(k, pfn);
    }
}

fn mark_old(k: &mut Kernel, pfn: u32) {
    let f = &k.folios;
    if f.test(pfn, super::folio::flags::FILE) {
        return;
    }
    let (mm, vma, index) = f.owner(pfn as usize);
    let nr = f.nr_pages(pfn);
    let Some(Some(v)) = k
        .mms
        .get(mm as usize)
        .and_then(|m| m.vmas.get(vma as usize))
    else {
        return;
    };
    if v.special.is_empty() {
        return;
    }
    let v = k.mms[mm as usize].vma_mut(vma);
    for set in v.special.iter_mut() {
        for i in index.max(set.first)..(index + nr).min(set.first + set.nr) {
            set.insert(i, OLD);
        }
    }
}

/// Register page `index` of `vma` of `mm` as special of `kinds` (for mechanisms that make a
/// mapped page fault on access, such as NUMA hinting's PROT_NONE). A range without a set gets
/// one at its first Access, from `classify`.
pub fn mark_special(k: &mut Kernel, mm: u32, vma: u32, index: u32, kinds: SpecialKinds) {
    for set in k.mms[mm as usize].vma_mut(vma).special.iter_mut() {
        if set.covers(index) {
            set.insert(index, kinds);
        }
    }
}

/// The set of [first, first + nr) of `vma`, built from its PTEs (and the accessed bits of
/// the folios they map) the first time; `stamp` marks it used.
fn ensure_set<'a>(
    vma: &'a mut Vma,
    folios: &FolioTable,
    first: u32,
    nr: u32,
    stamp: u64,
) -> &'a mut SpecialSet {
    let at = match vma
        .special
        .iter()
        .position(|s| s.first == first && s.nr == nr)
    {
        Some(at) => at,
        None => {
            if vma.special.len() >= MAX_SETS_PER_VMA {
                let least = (0..vma.special.len())
                    .min_by_key(|&i| vma.special[i].last_used)
                    .expect("a full list");
                vma.special.swap_remove(least);
            }
            let mut set = SpecialSet::new(first, nr);
            for index in first..first + nr {
                let pte = vma.ptes[index as usize];
                let mut kinds = classify(pte);
                if pte.is_present() && !folios.test(folios.head_of(pte.pfn()), flags::YOUNG) {
                    kinds |= OLD;
                }
                if kinds != 0 {
                    set.insert(index, kinds);
                }
            }
            vma.special.push(set);
            vma.special.len() - 1
        }
    };
    let set = &mut vma.special[at];
    set.last_used = stamp;
    set
}

/// An access met the page of `vmf`, listed as special with `listed` kinds: handle what the
/// page still is. Ok(false): the page was plainly mapped after all (a stale member).
pub fn access_special(
    k: &mut Kernel,
    ctx: &mut Ctx,
    vmf: &VmFault,
    listed: SpecialKinds,
) -> Result<bool, MmError> {
    let VmFault {
        mm,
        vma,
        index,
        write,
        ..
    } = *vmf;
    let pte = k.mms[mm as usize].vma(vma).ptes[index as usize];
    let now = classify(pte);
    if now & listed & NOT_PRESENT != 0 {
        handle_mm_fault(k, ctx, mm, vma, index, write)?;
        return Ok(true);
    }
    if listed & OLD != 0 && pte.is_present() {
        // The hardware sets the accessed bit; reclaim's next folio_referenced sees it.
        let head = k.folios.head_of(pte.pfn());
        k.folios.set(head, flags::YOUNG);
    }
    if now & listed & PROT_NONE != 0 {
        super::memory::handle_pte_fault(k, ctx, vmf);
        return Ok(true);
    }
    Ok(false)
}

/// One Access op's arguments.
#[derive(Debug, Clone, Copy)]
pub struct Access {
    pub mm: u32,
    pub vma: u32,
    pub first: u32,
    pub nr: u32,
    pub count: u64,
    pub write: bool,
    pub mlp: u32,
}

/// Who accesses, and where it must stop.
pub struct Accessor<'a> {
    pub task: u32,
    pub hot: Option<HotSet>,
    pub rng: &'a mut SimRng,
    /// Stop the plain accesses here (a wake-up or the end of the slice).
    pub stop_ns: u64,
    /// The mean cost of an access seen last: how many fit before `stop_ns`.
    pub ns_per_access: &'a mut f64,
    pub user_ns: &'a mut u64,
}

/// The user-mode side of running on this CPU: refill the hot set if a flush or another task
/// emptied it (user time).
pub fn run_user(k: &mut Kernel, ctx: &mut Ctx, task: u32, mm: u32, hot: HotSet, user_ns: &mut u64) {
    let r = k.tlb_cache.run_user(ctx.cpu, task, mm, hot, &k.cost);
    if r.ns > 0 {
        ctx.spend(CpuCost::UserAccess, r.ns);
        *user_ns += r.ns;
    }
}

/// One step of an Access op of which `done` accesses are behind: plain accesses up to the next
/// special page, then that page. Returns the accesses done after the step.
pub fn access_step(
    k: &mut Kernel,
    ctx: &mut Ctx,
    a: &Access,
    done: u64,
    who: &mut Accessor,
) -> Result<u64, MmError> {
    if let Some(hot) = who.hot {
        run_user(k, ctx, who.task, a.mm, hot, who.user_ns);
    }
    if a.nr == 0 {
        return Ok(a.count);
    }
    let remaining = a.count - done;
    let stamp = ctx.now_ns;
    k.access_sets = true;
    let set = ensure_set(
        k.mms[a.mm as usize].vma_mut(a.vma),
        &k.folios,
        a.first,
        a.nr,
        stamp,
    );
    let p = set.len() as f64 / a.nr as f64;
    // Plain accesses before the next one to land on a listed page: Geometric(p).
    let gap = if p == 0.0 {
        remaining
    } else if p >= 1.0 {
        0
    } else {
        let u = (who.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        ((1.0 - u).ln() / (1.0 - p).ln())
            .floor()
            .min(remaining as f64) as u64
    };
    let mut plain = gap;
    // Preemptible like Compute: no more plain accesses than fit before stop_ns.
    let mut stopped = false;
    if who.stop_ns > ctx.now_ns && *who.ns_per_access > 0.0 {
        let fit = ((who.stop_ns - ctx.now_ns) as f64 / *who.ns_per_access).ceil() as u64;
        if fit < plain {
            plain = fit.max(1);
            stopped = true;
        }
    }
    let huge_frac = sample_huge_frac(k, a, who.rng);
    charge_plain(k, ctx, a, plain, huge_frac, who);
    let mut done = done + plain;
    if stopped || done == a.count {
        return Ok(done);
    }
    // The access that lands on a listed page.
    k.access_sets = true;
    let set = ensure_set(
        k.mms[a.mm as usize].vma_mut(a.vma),
        &k.folios,
        a.first,
        a.nr,
        stamp,
    );
    let index = set.pick(who.rng);
    let listed = set.remove(index);
    let vmf = VmFault::new(a.mm, a.vma, index, a.write);
    access_special(k, ctx, &vmf, listed)?;
    charge_plain(k, ctx, a, 1, huge_frac, who);
    done += 1;
    Ok(done)
}

/// `n` plain accesses: TLB and cache costs as user time.
fn charge_plain(
    k: &mut Kernel,
    ctx: &mut Ctx,
    a: &Access,
    n: u64,
    huge_frac: f64,
    who: &mut Accessor,
) {
    if n == 0 {
        return;
    }
    let key = (a.mm as u64) << 48 ^ (a.vma as u64) << 32 ^ (a.first as u64) << 16 ^ a.nr as u64;
    let cost = k.tlb_cache.random_access(
        ctx.cpu,
        RandomAccess {
            key,
            pages: a.nr as u64,
            huge_frac,
            count: n,
            write: a.write,
            mlp: a.mlp,
        },
        &k.cost,
    );
    ctx.spend(CpuCost::UserAccess, cost.ns);
    *who.user_ns += cost.ns;
    *who.ns_per_access = cost.ns_per_access;
}

/// The share of the range's present pages mapped by a PMD, from a few random pages.
fn sample_huge_frac(k: &Kernel, a: &Access, rng: &mut SimRng) -> f64 {
    let ptes = &k.mms[a.mm as usize].vma(a.vma).ptes;
    let (mut present, mut huge) = (0u32, 0u32);
    for _ in 0..HUGE_SAMPLES.min(a.nr) {
        let pte = ptes[(a.first + rng.below(a.nr as u64) as u32) as usize];
        if pte.is_present() {
            present += 1;
            let head = k.folios.head_of(pte.pfn());
            if k.folios.test(head, super::folio::flags::PMD_MAPPED) {
                huge += 1;
            }
        }
    }
    if present == 0 {
        0.0
    } else {
        huge as f64 / present as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_set_picks_and_removes_in_o1() {
        let mut s = SpecialSet::new(0, 10);
        for i in [3, 5, 7] {
            s.insert(i, NOT_PRESENT);
        }
        s.insert(5, NOT_PRESENT);
        assert_eq!(s.len(), 3);
        assert_eq!(s.remove(3), NOT_PRESENT);
        assert_eq!(s.remove(3), 0);
        assert_eq!(s.len(), 2);
        s.check().unwrap();
        let mut rng = SimRng::stream(1, "t");
        for _ in 0..20 {
            assert!([5, 7].contains(&s.pick(&mut rng)));
        }
        s.remove(7);
        s.remove(5);
        assert!(s.is_empty());
        s.check().unwrap();
    }
}
