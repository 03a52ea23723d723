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
//! overlaps with the next request's service (the device's internal parallelism). A task
//! inside blk_start_plug / blk_finish_plug builds its requests in its plug first (hw/blk_plug.rs):
//! they hold tags and reach the device when the plug flushes.

use super::blk_limits::QueueLimits;
use super::blk_plug::{BlkPlug, PluggedRequest};
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
    /// Per CPU: the requests its running task holds in its plug.
    plugs: Vec<BlkPlug>,
    /// (token, completion) of each plugged bio whose request the device took, for the
    /// submitter to collect (take_issued).
    issued: Vec<(u32, u64)>,
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
            plugs: Vec::new(),
            issued: Vec::new(),
            idle_at_ns: 0,
            stats: QueueStats::default(),
        }
    }

    /// submit_bio of `bytes` at page `pos` (None: never merged). Returns when the request
    /// holding the bio's last byte completes.
    pub fn submit(&mut self, ctx: &mut Ctx, dir: Dir, pos: Option<u64>, bytes: u64) -> u64 {
        let segments = self.limits.bio_segments(bytes);
        if let Some(done_ns) = self.back_merge(ctx, dir, pos, bytes, segments) {
            return done_ns;
        }
        let mut left = bytes;
        let mut pos = pos;
        let mut done_ns = ctx.now_ns;
        while left > 0 {
            let chunk = left.min(self.limits.max_bio_bytes());
            self.get_tag(ctx, dir);
            let rq = self.new_request(ctx.now_ns, dir, pos, chunk, None);
            done_ns = self.dispatch(ctx, rq);
            left -= chunk;
            pos = pos.map(|p| p + chunk / PAGE_SIZE);
        }
        done_ns
    }

    /// submit_bio of `bytes` at page `pos` by a task holding a plug, `token` marking the
    /// bio: blk_mq_submit_bio tries the plug's last request, then the elevator's (the CPU's
    /// open request), else takes a tag and plugs a new request. When each part of the bio
    /// completes is told through take_issued once the device has its request.
    pub fn submit_plugged(
        &mut self,
        ctx: &mut Ctx,
        dir: Dir,
        pos: u64,
        bytes: u64,
        token: Option<u32>,
    ) {
        if self.plugs.len() <= ctx.cpu {
            self.plugs.resize(ctx.cpu + 1, BlkPlug::default());
        }
        let mut left = bytes;
        let mut pos = pos;
        while left > 0 {
            let chunk = left.min(self.limits.max_bio_bytes());
            self.plug_bio(ctx, dir, pos, chunk, token);
            left -= chunk;
            pos += chunk / PAGE_SIZE;
        }
    }

    /// One bio within the limits, under the plug.
    fn plug_bio(&mut self, ctx: &mut Ctx, dir: Dir, pos: u64, bytes: u64, token: Option<u32>) {
        if self.plugs[ctx.cpu].attempt_merge(&self.limits, dir, pos, bytes, token) {
            self.stats.merged_bios += 1;
            return;
        }
        let segments = self.limits.bio_segments(bytes);
        if let Some(done_ns) = self.back_merge(ctx, dir, Some(pos), bytes, segments) {
            self.issued.extend(token.map(|t| (t, done_ns)));
            return;
        }
        self.get_tag(ctx, dir);
        if self.plugs[ctx.cpu].must_flush() {
            self.flush_plug(ctx);
        }
        let rq = self.new_request(ctx.now_ns, dir, Some(pos), bytes, token);
        self.plugs[ctx.cpu].add(rq);
    }

    /// blk_mq_flush_plug_list: the CPU's plugged requests go to the device in order; one that
    /// continues the CPU's queued request joins it at insertion (elv_attempt_insert_merge,
    /// freeing its tag).
    pub fn flush_plug(&mut self, ctx: &Ctx) {
        let Some(rqs) = self.plugs.get_mut(ctx.cpu).map(BlkPlug::take) else {
            return;
        };
        for mut rq in rqs {
            let tokens = std::mem::take(&mut rq.tokens);
            let pos = rq.end_page - rq.bytes / PAGE_SIZE;
            let done_ns = match self.back_merge(ctx, rq.dir, Some(pos), rq.bytes, rq.segments) {
                Some(done_ns) => done_ns,
                None => self.dispatch(ctx, rq),
            };
            self.issued.extend(tokens.into_iter().map(|t| (t, done_ns)));
        }
    }

    /// The (token, completion) of every plugged bio the device has taken since last asked.
    pub fn take_issued(&mut self, out: &mut Vec<(u32, u64)>) {
        out.append(&mut self.issued);
    }

    /// The mark of the bio `cpu`'s task plugged last, if its plug holds any.
    pub fn plugged_last_token(&self, cpu: usize) -> Option<u32> {
        self.plugs.get(cpu).and_then(BlkPlug::last_token)
    }

    /// A request of one bio, taking its tag at `now_ns`.
    fn new_request(
        &self,
        now_ns: u64,
        dir: Dir,
        pos: Option<u64>,
        bytes: u64,
        token: Option<u32>,
    ) -> PluggedRequest {
        PluggedRequest {
            dir,
            end_page: pos.map_or(u64::MAX, |p| p + bytes / PAGE_SIZE),
            bytes,
            segments: self.limits.bio_segments(bytes),
            tag_ns: now_ns,
            tokens: token.into_iter().collect(),
        }
    }

    /// The elevator's back merge (blk_mq_sched_bio_merge; for a plugged request at insertion,
    /// elv_attempt_insert_merge): `bytes` in `segments` at `pos` that continue the CPU's open
    /// request, while it has not completed and the limits let it grow, extend it (the device
    /// serves the added bytes right after; no tag, no per-request cost).
    fn back_merge(
        &mut self,
        ctx: &Ctx,
        dir: Dir,
        pos: Option<u64>,
        bytes: u64,
        segments: u32,
    ) -> Option<u64> {
        let pos = pos?;
        let o = self.open.get_mut(ctx.cpu)?.as_mut()?;
        let fits = self.limits.mergeable(o.bytes, o.segments, bytes, segments);
        if o.dir != dir || o.end_page != pos || !fits || o.done_ns <= ctx.now_ns {
            return None;
        }
        let timing = match dir {
            Dir::Read => self.read,
            Dir::Write => self.write,
        };
        self.busy_until_ns += timing.transfer_ns(bytes);
        o.bytes += bytes;
        o.segments += segments;
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
            if self.plugs.get(ctx.cpu).is_some_and(|p| !p.is_empty()) {
                // io_schedule_prepare: the plug goes to the device before the task sleeps.
                self.flush_plug(ctx);
                continue;
            }
            debug_assert_eq!(self.plugged(None), 0, "a task sleeps with its plug flushed");
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

    /// Requests of `dir` holding a tag: in flight, open, or plugged.
    fn in_flight_of(&self, dir: Dir) -> usize {
        self.in_flight[dir as usize].len() + self.opens(Some(dir)).count() + self.plugged(Some(dir))
    }

    /// Requests in the CPUs' plugs (of `dir`, or any).
    fn plugged(&self, dir: Option<Dir>) -> usize {
        self.plugs.iter().map(|p| p.count(dir)).sum()
    }

    /// The device takes a new request (holding a tag since `rq.tag_ns`): served after what it
    /// has queued.
    fn dispatch(&mut self, ctx: &Ctx, rq: PluggedRequest) -> u64 {
        let PluggedRequest {
            dir,
            end_page,
            bytes,
            segments,
            tag_ns,
            ..
        } = rq;
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
            end_page,
            bytes,
            segments,
            done_ns,
        });
        self.idle_at_ns = self.idle_at_ns.max(done_ns);
        if dir == Dir::Write {
            self.stats.write_rqs += 1;
            self.stats.write_ticks_ns += done_ns - tag_ns;
        }
        self.wbt.on_dispatch(ctx.now_ns, dir == Dir::Read, done_ns);
        self.stats.wbt = self.wbt.stats.clone();
        done_ns
    }

    /// Requests holding a tag (some may have completed since the last submission).
    pub fn in_flight_requests(&self) -> usize {
        self.in_flight[0].len()
            + self.in_flight[1].len()
            + self.opens(None).count()
            + self.plugged(None)
    }

    /// Requests held in the CPUs' plugs.
    pub fn plugged_requests(&self) -> usize {
        self.plugged(None)
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
    fn plugged_page_bios_build_one_request_that_reaches_the_device_at_the_flush() {
        let mut q = queue(64);
        let mut ctx = Ctx::new(0, 0);
        for slot in 0..8 {
            q.submit_plugged(&mut ctx, Dir::Write, slot, PAGE_SIZE, Some(slot as u32));
            // Each bio takes a while to build: the device would have finished the last one.
            ctx.now_ns += 100_000;
        }
        assert_eq!(q.stats.write_rqs, 0, "the device saw nothing yet");
        assert_eq!(
            q.in_flight_requests(),
            1,
            "the plugged request holds its tag"
        );
        let mut issued = Vec::new();
        q.take_issued(&mut issued);
        assert!(issued.is_empty());
        q.flush_plug(&ctx);
        q.take_issued(&mut issued);
        // One command for 8 pages, taken at the flush (800 µs).
        let done = 800_000 + 1_000 + 8 * 1_000 + 10_000;
        assert_eq!(issued, (0..8).map(|t| (t, done)).collect::<Vec<_>>());
        assert_eq!((q.stats.write_rqs, q.stats.merged_bios), (1, 7));
        assert_eq!(q.stats.write_ticks_ns, done, "ticks count from the tag");
        // Unplugged, the same bios each find the last request done: 8 requests.
        let mut q = queue(64);
        for slot in 0..8 {
            q.submit(&mut ctx, Dir::Write, Some(slot), PAGE_SIZE);
            ctx.now_ns += 100_000;
        }
        assert_eq!(q.stats.write_rqs, 8);
    }

    #[test]
    fn a_plug_flushes_behind_a_128k_request_and_before_its_task_sleeps_for_a_tag() {
        let mut q = queue(2);
        let mut ctx = Ctx::new(0, 0);
        for slot in 0..32 {
            q.submit_plugged(&mut ctx, Dir::Write, slot, PAGE_SIZE, Some(slot as u32));
        }
        // A second request (elsewhere) finds a 128 KiB one plugged: that one goes first.
        q.submit_plugged(&mut ctx, Dir::Write, 100, PAGE_SIZE, Some(100));
        assert_eq!((q.stats.write_rqs, q.plugged_requests()), (1, 1));
        // Both tags held: the third request's task flushes its plug, then sleeps.
        q.submit_plugged(&mut ctx, Dir::Write, 200, PAGE_SIZE, Some(200));
        assert_eq!(q.stats.write_rqs, 2, "flushed before the sleep");
        assert!(ctx.iowait_ns > 0);
        assert_eq!(q.plugged_requests(), 1);
        assert!(q.in_flight_requests() <= 2);
        let mut issued = Vec::new();
        q.take_issued(&mut issued);
        assert_eq!(
            issued.len(),
            33,
            "the 32 pages and the 100th; the 200th is plugged"
        );
    }

    #[test]
    fn a_bio_split_across_a_flush_stays_plugged_by_its_last_part() {
        let mut q = queue(64);
        let mut ctx = Ctx::new(0, 0);
        // 1 MiB requests: a 1.5 MiB bio is two; the second finds the first (>= 128 KiB)
        // plugged and flushes it.
        q.submit_plugged(&mut ctx, Dir::Write, 0, 3 << 19, Some(7));
        let mut issued = Vec::new();
        q.take_issued(&mut issued);
        assert_eq!(issued.len(), 1, "the first part reached the device");
        assert_eq!(q.plugged_last_token(0), Some(7), "its last part is plugged");
        assert_eq!(q.plugged_last_token(1), None);
        q.flush_plug(&ctx);
        q.take_issued(&mut issued);
        assert!(issued[1].1 > issued[0].1, "the last part completes later");
        assert_eq!(q.plugged_last_token(0), None);
    }

    #[test]
    fn a_plugged_request_continuing_the_queued_one_joins_it_at_the_flush() {
        let mut q = queue(64);
        let mut ctx = Ctx::new(0, 0);
        q.submit(&mut ctx, Dir::Write, Some(0), PAGE_SIZE);
        // The plug is empty, so a bio continuing the queued request merges there at once.
        q.submit_plugged(&mut ctx, Dir::Write, 1, PAGE_SIZE, Some(1));
        let mut issued = Vec::new();
        q.take_issued(&mut issued);
        assert_eq!(issued, vec![(1, 1_000 + 2_000 + 10_000)]);
        assert_eq!((q.stats.write_rqs, q.stats.merged_bios), (1, 1));
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
