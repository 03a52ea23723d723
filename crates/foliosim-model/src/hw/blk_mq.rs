//! The request queue of an asynchronous block device (block/blk-mq.c): at most `nr_requests`
//! requests in flight (a submitter that finds no free tag sleeps in blk_mq_get_tag, iowait),
//! a bio adjacent to the request its submitter issued last is merged into it (the plug's
//! blk_attempt_plug_merge / the elevator's back merge) while the queue's limits allow it, and
//! a bio past them is split (bio_split_to_limits; both hw/blk_limits.rs). Writes pass
//! writeback throttling first (block/blk-wbt.c): a swap write (REQ_SWAP is in REQ_HIPRIO) may
//! have rq_depth.max_depth writes in flight, a depth wbt scales every monitoring window; a
//! writer that sleeps there waits, with every writer after it, until wbt_rqw_done's rule wakes
//! them (hw/blk_wbt.rs). The device serves one request at a time per direction's timing: a
//! per-request command cost plus the bytes at its bandwidth, then a completion latency that
//! overlaps with the next request's service (the device's internal parallelism).

use super::blk_limits::QueueLimits;
use super::blk_wbt::{Wbt, WbtStats};
use crate::engine::{Ctx, WaitKind};
use crate::scenario::PAGE_SIZE;
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One direction's timing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DirTiming {
    /// From the end of the request's service to its completion (overlaps other requests).
    pub latency_ns: u64,
    /// The device's serial cost per request (command processing), beside the transfer.
    pub per_request_ns: u64,
    pub bandwidth_bytes_per_s: u64,
}

impl DirTiming {
    fn service_ns(&self, bytes: u64) -> u64 {
        self.per_request_ns + self.transfer_ns(bytes)
    }

    fn transfer_ns(&self, bytes: u64) -> u64 {
        (bytes as u128 * 1_000_000_000 / self.bandwidth_bytes_per_s.max(1) as u128) as u64
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Read,
    Write,
}

/// The request a CPU issued last, open to back merges from that CPU's bios until it
/// completes: the plug's request, then the elevator's queued request (mq-deadline back-merges
/// a bio into any request still waiting whose end is the bio's start: each CPU's swap bios
/// continue its own cluster, so its last request is the one they reach).
#[derive(Debug, Clone, Copy)]
struct OpenRequest {
    dir: Dir,
    /// The page (slot or block) right after its last one.
    end_page: u64,
    bytes: u64,
    /// nr_phys_segments: the sum of its bios' segments.
    segments: u32,
    done_ns: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What the queue did, beside the device's request counts.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct QueueStats {
    /// Bios merged into a request already queued (no request of their own).
    pub merged_bios: u64,
    /// Submissions that slept for a tag or in wbt (each wake that slept again counts again).
    pub tag_waits: u64,
    /// Of those, sleeps in wbt_wait (over its limit or behind its sleepers).
    #[serde(skip_serializing_if = "is_zero")]
    pub wbt_waits: u64,
    pub tag_wait_ns: u64,
    /// Write requests (after merging) and the sum of their times from taking a tag to
    /// completion, as /sys/block/<dev>/stat's write I/Os and write ticks count them.
    #[serde(skip_serializing_if = "is_zero")]
    pub write_rqs: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub write_ticks_ns: u64,
    /// Writeback throttling's windows and depth changes.
    pub wbt: WbtStats,
}

pub struct RequestQueue {
    /// /sys/block/<dev>/queue/nr_requests: tags a submitter can hold.
    pub nr_requests: u32,
    /// How large a request may grow.
    pub limits: QueueLimits,
    pub read: DirTiming,
    pub write: DirTiming,
    busy_until_ns: u64,
    /// Completion times of the requests in flight other than the open one, by direction.
    in_flight: [BinaryHeap<Reverse<u64>>; 2],
    /// Writeback throttling: writes in flight before a writer sleeps in wbt_wait.
    pub wbt: Wbt,
    /// Writers sleep in wbt's rq_wait over [since, until): a writer that comes then queues
    /// behind them (rq_qos_wait: waitqueue_active) until a completion or a scale-up wakes
    /// them all. An interval, not a flag: tasks may submit out of time order.
    wbt_sleep: Option<(u64, u64)>,
    /// Per CPU (indexed by it): its open request.
    open: Vec<Option<OpenRequest>>,
    idle_at_ns: u64,
    pub stats: QueueStats,
}

impl RequestQueue {
    pub fn new(
        nr_requests: u32,
        limits: QueueLimits,
        read: DirTiming,
        write: DirTiming,
        wbt: Wbt,
    ) -> Self {
        RequestQueue {
            nr_requests: nr_requests.max(1),
            limits,
            read,
            write,
            busy_until_ns: 0,
            in_flight: [BinaryHeap::new(), BinaryHeap::new()],
            wbt,
            wbt_sleep: None,
            open: Vec::new(),
            idle_at_ns: 0,
            stats: QueueStats::default(),
        }
    }

    /// submit_bio of `bytes` at page `pos` (None: never merged). Returns when the request
    /// holding the bio's last byte completes.
    pub fn submit(&mut self, ctx: &mut Ctx, dir: Dir, pos: Option<u64>, bytes: u64) -> u64 {
        if let Some(done_ns) = self.back_merge(ctx, dir, pos, bytes) {
            return done_ns;
        }
        let mut left = bytes;
        let mut pos = pos;
        let mut done_ns = ctx.now_ns;
        while left > 0 {
            let chunk = left.min(self.limits.max_bio_bytes());
            self.get_tag(ctx, dir);
            done_ns = self.dispatch(ctx, dir, pos, chunk);
            left -= chunk;
            pos = pos.map(|p| p + chunk / PAGE_SIZE);
        }
        done_ns
    }

    /// blk_attempt_plug_merge: a bio that continues the submitter's last request, while that
    /// request is in flight and ll_back_merge_fn lets it grow, extends it (the device serves
    /// the added bytes right after; no tag, no per-request cost).
    fn back_merge(&mut self, ctx: &Ctx, dir: Dir, pos: Option<u64>, bytes: u64) -> Option<u64> {
        let pos = pos?;
        let o = self.open.get_mut(ctx.cpu)?.as_mut()?;
        let fits = self.limits.back_mergeable(o.bytes, o.segments, bytes);
        if o.dir != dir || o.end_page != pos || !fits || o.done_ns <= ctx.now_ns {
            return None;
        }
        let timing = match dir {
            Dir::Read => self.read,
            Dir::Write => self.write,
        };
        self.busy_until_ns += timing.transfer_ns(bytes);
        o.bytes += bytes;
        o.segments += self.limits.bio_segments(bytes);
        o.end_page += bytes / PAGE_SIZE;
        let done_ns = self.busy_until_ns + timing.latency_ns;
        if dir == Dir::Write {
            self.stats.write_ticks_ns += done_ns.saturating_sub(o.done_ns);
        }
        o.done_ns = done_ns;
        self.idle_at_ns = self.idle_at_ns.max(o.done_ns);
        self.stats.merged_bios += 1;
        Some(o.done_ns)
    }

    /// wbt_wait, then blk_mq_get_tag: a write with wbt's limit of writes in flight (or behind
    /// writers already asleep there), or any request with every tag held, io_schedule()s
    /// until what it waits for happens: a completion that frees a tag, the completion at which
    /// wbt_rqw_done wakes wbt's sleepers, or a window timer that may raise the limit.
    fn get_tag(&mut self, ctx: &mut Ctx, dir: Dir) {
        loop {
            self.retire(ctx.now_ns);
            self.wbt_wakeups(ctx.now_ns);
            let now = ctx.now_ns;
            let behind_sleepers = self
                .wbt_sleep
                .filter(|&(since, until)| since <= now && now < until);
            let writes_full = dir == Dir::Write
                && (behind_sleepers.is_some()
                    || self.in_flight_of(Dir::Write) >= self.wbt.write_limit() as usize);
            let tags_full = self.in_flight_requests() >= self.nr_requests as usize;
            if !writes_full && !tags_full {
                if dir == Dir::Write {
                    self.wbt.on_write_issued(now);
                }
                return;
            }
            let wake_ns = if writes_full {
                let until = behind_sleepers.map_or_else(|| self.wbt_wake_ns(), |(_, u)| u);
                let since = behind_sleepers.map_or(now, |(s, _)| s);
                self.wbt_sleep = Some((since, until));
                self.stats.wbt_waits += 1;
                until.min(self.wbt.window_end_ns().unwrap_or(u64::MAX))
            } else {
                self.first_completion_ns(None)
            };
            self.stats.tag_waits += 1;
            self.stats.tag_wait_ns += wake_ns.saturating_sub(now);
            ctx.wait_until(wake_ns, WaitKind::Io);
        }
    }

    /// Run wbt's window timers to `now_ns`; a scale-up wakes every sleeper (rwb_wake_all),
    /// ending their interval at that window's end.
    fn wbt_wakeups(&mut self, now_ns: u64) {
        self.wbt.advance(now_ns);
        if let (Some((since, until)), Some(woke)) = (self.wbt_sleep, self.wbt.woke_all_ns()) {
            if since <= woke && woke < until {
                self.wbt_sleep = Some((since, woke));
            }
        }
    }

    /// When wbt's sleepers wake: the completion that leaves wake_inflight() writes in flight.
    fn wbt_wake_ns(&self) -> u64 {
        let mut done: Vec<u64> = self.in_flight[Dir::Write as usize]
            .iter()
            .map(|r| r.0)
            .chain(self.opens(Some(Dir::Write)).map(|o| o.done_ns))
            .collect();
        done.sort_unstable();
        let keep = self.wbt.wake_inflight() as usize;
        let nth = done.len().saturating_sub(keep + 1);
        done.get(nth).copied().unwrap_or(0)
    }

    /// The first completion among requests in flight (of `dir`, or any).
    fn first_completion_ns(&self, dir: Option<Dir>) -> u64 {
        let heaps = self
            .in_flight
            .iter()
            .enumerate()
            .filter(|(d, _)| dir.is_none_or(|dir| dir as usize == *d))
            .filter_map(|(_, h)| h.peek().map(|r| r.0));
        let open = self.opens(dir).map(|o| o.done_ns);
        heaps.chain(open).min().unwrap_or(0)
    }

    /// The CPUs' open requests (of `dir`, or any).
    fn opens(&self, dir: Option<Dir>) -> impl Iterator<Item = &OpenRequest> {
        self.open
            .iter()
            .flatten()
            .filter(move |o| dir.is_none_or(|dir| dir == o.dir))
    }

    /// blk_mq_end_request for every request done by `now_ns`: its tag is free again.
    fn retire(&mut self, now_ns: u64) {
        for h in &mut self.in_flight {
            while h.peek().is_some_and(|r| r.0 <= now_ns) {
                h.pop();
            }
        }
        for o in &mut self.open {
            if o.is_some_and(|o| o.done_ns <= now_ns) {
                *o = None;
            }
        }
    }

    fn in_flight_of(&self, dir: Dir) -> usize {
        self.in_flight[dir as usize].len() + self.opens(Some(dir)).count()
    }

    /// The device takes a new request (holding a tag): served after what it has queued.
    fn dispatch(&mut self, ctx: &Ctx, dir: Dir, pos: Option<u64>, bytes: u64) -> u64 {
        if self.open.len() <= ctx.cpu {
            self.open.resize(ctx.cpu + 1, None);
        }
        if let Some(o) = self.open[ctx.cpu].take() {
            self.in_flight[o.dir as usize].push(Reverse(o.done_ns));
        }
        let timing = match dir {
            Dir::Read => self.read,
            Dir::Write => self.write,
        };
        let start_ns = self.busy_until_ns.max(ctx.now_ns);
        self.busy_until_ns = start_ns + timing.service_ns(bytes);
        let done_ns = self.busy_until_ns + timing.latency_ns;
        self.open[ctx.cpu] = Some(OpenRequest {
            dir,
            end_page: pos.map_or(u64::MAX, |p| p + bytes / PAGE_SIZE),
            bytes,
            segments: self.limits.bio_segments(bytes),
            done_ns,
        });
        self.idle_at_ns = self.idle_at_ns.max(done_ns);
        if dir == Dir::Write {
            self.stats.write_rqs += 1;
            self.stats.write_ticks_ns += done_ns - ctx.now_ns;
        }
        self.wbt.on_dispatch(ctx.now_ns, dir == Dir::Read, done_ns);
        self.stats.wbt = self.wbt.stats.clone();
        done_ns
    }

    /// Requests holding a tag (some may have completed since the last submission).
    pub fn in_flight_requests(&self) -> usize {
        self.in_flight[0].len() + self.in_flight[1].len() + self.opens(None).count()
    }

    /// When every request submitted so far has completed.
    pub fn idle_at_ns(&self) -> u64 {
        self.idle_at_ns
    }
}

#[cfg(test)]
mod tests {
    use super::super::blk_wbt::MIN_LAT_ROT_NS;
    use super::*;

    fn timing(latency_ns: u64) -> DirTiming {
        DirTiming {
            latency_ns,
            per_request_ns: 1_000,
            bandwidth_bytes_per_s: 4_096_000_000, // 1 µs per 4 KiB
        }
    }

    /// 1 MiB requests of at most 128 segments.
    const LIMITS: QueueLimits = QueueLimits {
        max_sectors_bytes: 1 << 20,
        max_segments: 128,
        max_segment_bytes: 1 << 20,
    };

    fn queue(depth: u32) -> RequestQueue {
        let wbt = Wbt::new(MIN_LAT_ROT_NS, depth, false);
        RequestQueue::new(depth, LIMITS, timing(50_000), timing(10_000), wbt)
    }

    #[test]
    fn the_submitter_sleeps_in_iowait_when_every_tag_is_held() {
        let mut q = queue(2);
        let mut ctx = Ctx::new(0, 0);
        // Non-adjacent writes: no merging, one tag each.
        let a = q.submit(&mut ctx, Dir::Write, Some(0), PAGE_SIZE);
        let b = q.submit(&mut ctx, Dir::Write, Some(100), PAGE_SIZE);
        assert_eq!((a, b), (12_000, 14_000));
        assert_eq!(ctx.iowait_ns, 0);
        assert_eq!(q.in_flight_requests(), 2);
        let c = q.submit(&mut ctx, Dir::Write, Some(200), PAGE_SIZE);
        // Waited for the first completion, then the device (idle since 4 µs) served it.
        assert_eq!(ctx.now_ns, a);
        assert_eq!(ctx.iowait_ns, a);
        assert_eq!(c, a + 2_000 + 10_000);
        assert!(q.in_flight_requests() <= 2);
        assert_eq!(q.stats.tag_waits, 1);
    }

    #[test]
    fn swap_writes_wait_at_wbt_depth_while_reads_still_get_tags() {
        let mut q = queue(64);
        assert_eq!(q.wbt.write_limit(), 16);
        let mut ctx = Ctx::new(0, 0);
        for i in 0..16 {
            q.submit(&mut ctx, Dir::Write, Some(i * 10), PAGE_SIZE);
        }
        assert_eq!(ctx.iowait_ns, 0);
        q.submit(&mut ctx, Dir::Read, None, PAGE_SIZE);
        assert_eq!(ctx.iowait_ns, 0, "a read is not write-throttled");
        q.submit(&mut ctx, Dir::Write, Some(1000), PAGE_SIZE);
        // Write i completes at 2 µs * (i + 1) + 10 µs. No write cache: wbt_rqw_done wakes
        // the writer once in flight < wb_normal (8) by wb_background / 2 (2): 6 left, at the
        // 10th completion.
        assert_eq!(
            ctx.now_ns, 30_000,
            "the 17th write waits for 10 completions"
        );
        assert!(q.in_flight_of(Dir::Write) <= 16);
        assert_eq!(q.stats.wbt_waits, 1);
    }

    /// 16 writes in flight on a queue with (or without) a write-back cache; returns when a
    /// 17th write got in and when a write from another CPU, 1 µs after the first completion
    /// (15 in flight, below the limit), got in.
    fn wbt_wake_times(write_cache: bool) -> (u64, u64) {
        let wbt = Wbt::new(MIN_LAT_ROT_NS, 64, write_cache);
        let mut q = RequestQueue::new(64, LIMITS, timing(50_000), timing(10_000), wbt);
        let mut ctx = Ctx::new(0, 0);
        for i in 0..16 {
            q.submit(&mut ctx, Dir::Write, Some(i * 10), PAGE_SIZE);
        }
        q.submit(&mut ctx, Dir::Write, Some(1000), PAGE_SIZE);
        let mut other = Ctx::new(1, 13_000);
        q.submit(&mut other, Dir::Write, Some(2000), PAGE_SIZE);
        (ctx.now_ns, other.now_ns)
    }

    #[test]
    fn a_write_back_cache_wakes_wbt_sleepers_only_when_no_write_is_in_flight() {
        // Write-back cache: wbt_rqw_done's limit is 0, so the sleeper waits for all 16 (the
        // last completes at 2 µs * 16 + 10 µs); the later writer queues behind it although
        // 15 < 16 are in flight (rq_qos_wait: waitqueue_active), and both get in together.
        assert_eq!(wbt_wake_times(true), (42_000, 42_000));
        // Without one: woken at 6 in flight (the 10th completion), the later writer with it.
        assert_eq!(wbt_wake_times(false), (30_000, 30_000));
    }

    #[test]
    fn a_writer_held_at_wbt_depth_gets_in_when_a_write_only_window_raises_it() {
        // Writes that complete 300 ms after service: none completes in the first window.
        let wbt = Wbt::new(MIN_LAT_ROT_NS, 64, false);
        let mut q = RequestQueue::new(64, LIMITS, timing(50_000), timing(300_000_000), wbt);
        let mut ctx = Ctx::new(0, 0);
        for i in 0..16 {
            q.submit(&mut ctx, Dir::Write, Some(i * 10), PAGE_SIZE);
        }
        q.submit(&mut ctx, Dir::Write, Some(1000), PAGE_SIZE);
        // The window armed by the first write ends at 100 ms: LAT_UNKNOWN_WRITES, depth 31.
        assert_eq!(
            ctx.now_ns, 100_000_000,
            "woken by wb_timer_fn, not a completion"
        );
        assert_eq!(q.wbt.write_limit(), 31);
        for i in 0..14 {
            q.submit(&mut ctx, Dir::Write, Some(2000 + i * 10), PAGE_SIZE);
        }
        assert_eq!(
            ctx.now_ns, 100_000_000,
            "31 writes in flight without another wait"
        );
        assert_eq!(q.in_flight_of(Dir::Write), 31);
        assert_eq!(q.stats.wbt.scale_ups, 1);
    }

    #[test]
    fn completions_come_in_order_of_service_and_reads_wait_longer() {
        let mut q = queue(32);
        let mut ctx = Ctx::new(0, 0);
        let w = q.submit(&mut ctx, Dir::Write, Some(0), PAGE_SIZE);
        let r = q.submit(&mut ctx, Dir::Read, None, PAGE_SIZE);
        let w2 = q.submit(&mut ctx, Dir::Write, Some(50), PAGE_SIZE);
        assert!(w < w2, "writes complete in submission order");
        assert_eq!(r, 4_000 + 50_000, "a read has the read latency");
        assert_eq!(q.idle_at_ns(), r);
    }

    #[test]
    fn a_request_of_page_bios_closes_at_max_segments() {
        let mut q = queue(64);
        let mut ctx = Ctx::new(0, 0);
        for slot in 0..129 {
            q.submit(&mut ctx, Dir::Write, Some(slot), PAGE_SIZE);
        }
        // 128 single-segment bios fill one request (512 KiB, below max_sectors_kb).
        assert_eq!((q.stats.write_rqs, q.stats.merged_bios), (2, 127));
    }

    #[test]
    fn an_adjacent_bio_from_the_same_cpu_is_merged_and_a_large_one_split() {
        let mut q = queue(32);
        let mut ctx = Ctx::new(0, 0);
        q.submit(&mut ctx, Dir::Write, Some(0), PAGE_SIZE);
        let done = q.submit(&mut ctx, Dir::Write, Some(1), PAGE_SIZE);
        assert_eq!(q.stats.merged_bios, 1);
        assert_eq!(q.in_flight_requests(), 1);
        assert_eq!(done, 1_000 + 2_000 + 10_000, "one command, two pages");
        // Another CPU's adjacent bio is its own request (plugs are per task).
        let mut other = Ctx::new(1, 0);
        q.submit(&mut other, Dir::Write, Some(2), PAGE_SIZE);
        assert_eq!(q.in_flight_requests(), 2);
        // ... and the first CPU's request still takes that CPU's next bio.
        q.submit(&mut ctx, Dir::Write, Some(2), PAGE_SIZE);
        assert_eq!((q.stats.merged_bios, q.in_flight_requests()), (2, 2));
        // 2 MiB with 1 MiB requests: two requests.
        q.submit(&mut ctx, Dir::Write, Some(1000), 2 << 20);
        assert_eq!(q.in_flight_requests(), 4);
    }
}
