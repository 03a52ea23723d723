//! Writeback throttling's write depth (block/blk-wbt.c, block/blk-rq-qos.c), on the simulated
//! clock: a swap write (REQ_SWAP is in REQ_HIPRIO) may have rq_depth.max_depth writes in
//! flight. The depth starts at RWB_DEF_DEPTH and wb_timer_fn moves it once per monitoring
//! window (100 ms, shorter while scaled down): up a step when the window saw writes and no
//! reads (LAT_UNKNOWN_WRITES) or reads within min_lat_nsec (LAT_OK), down when a read's
//! latency passed it (LAT_EXCEEDED). min_lat_nsec is 2 ms for a non-rotational queue and
//! 75 ms for a rotational one (wbt_default_latency_nsec); 0 turns wbt off (wbt_set_min_lat).
//! Windows are evaluated lazily, in order, when a submitter next looks; completions are known
//! when a request is dispatched, so each window sees exactly the completions that fell in it.
//! A writer over the limit sleeps (rq_qos_wait); wbt_rqw_done wakes the sleepers when enough
//! tracked writes completed: on a queue with a write-back cache (QUEUE_FLAG_WC) only when none
//! is left in flight, otherwise once in flight drops below wb_normal by wb_background / 2; a
//! scale-up wakes them too (rwb_wake_all). Not modelled: balance_dirty_pages' recent sleep
//! (wb_recent_wait, which would lift the write-back-cache rule to wb_normal), the lower limits
//! of background and normal writeback (every write here is a swap write, or is timed as one).

use serde::Serialize;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// RWB_DEF_DEPTH: the depth at scale step 0.
const RWB_DEF_DEPTH: u32 = 16;
/// RWB_WINDOW_NSEC: the monitoring window at scale steps <= 0.
const RWB_WINDOW_NS: u64 = 100_000_000;
/// RWB_MIN_WRITE_SAMPLES: a window needs this many writes (and one read) to judge latency.
const RWB_MIN_WRITE_SAMPLES: u32 = 3;
/// RWB_UNKNOWN_BUMP: windows without information before the step drifts back to 0.
const RWB_UNKNOWN_BUMP: u32 = 5;
/// wbt_default_latency_nsec: the read latency target of a non-rotational queue.
pub const MIN_LAT_NONROT_NS: u64 = 2_000_000;
/// wbt_default_latency_nsec: the read latency target of a rotational queue.
pub const MIN_LAT_ROT_NS: u64 = 75_000_000;

/// latency_exceeded's verdict on one window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LatStatus {
    Ok,
    Unknown,
    UnknownWrites,
    Exceeded,
}

/// What wbt did.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct WbtStats {
    pub windows: u64,
    pub scale_ups: u64,
    pub scale_downs: u64,
    /// The deepest rq_depth.max_depth reached.
    pub max_depth_peak: u32,
}

/// One window's completions (blk_rq_stat of READ and WRITE).
#[derive(Debug, Clone, Copy, Default)]
struct WindowStat {
    reads: u32,
    read_min_ns: u64,
    writes: u32,
}

/// A completion not yet counted: (done_ns, is_read, latency_ns).
type Sample = (u64, bool, u64);

pub struct Wbt {
    /// 0: wbt off, writes limited by tags only.
    min_lat_ns: u64,
    /// blk_queue_depth: the tag count.
    queue_depth: u32,
    /// QUEUE_FLAG_WC: the device reports a volatile write cache (write_cache "write back").
    write_cache: bool,
    scale_step: i32,
    scaled_max: bool,
    max_depth: u32,
    /// calc_wb_limits: the normal and background writeback limits, from max_depth.
    wb_normal: u32,
    wb_background: u32,
    cur_win_ns: u64,
    /// The armed blk_stat window [start, end); None while the timer is idle.
    window: Option<(u64, u64)>,
    unknown_cnt: u32,
    pending: BinaryHeap<Reverse<Sample>>,
    /// Writes among `pending`: in flight at the window's end once earlier ones are counted.
    pending_writes: u32,
    /// rwb->sync_issue: the tracked read's issue and completion.
    sync_read: Option<(u64, u64)>,
    /// When a scale-up last woke every sleeper (rwb_wake_all at that window's end).
    woke_all_ns: Option<u64>,
    pub stats: WbtStats,
}

impl Wbt {
    /// wbt_init: depth RWB_DEF_DEPTH (limited by the queue), step 0, timer idle.
    pub fn new(min_lat_ns: u64, queue_depth: u32, write_cache: bool) -> Self {
        let mut w = Wbt {
            min_lat_ns,
            queue_depth: queue_depth.max(1),
            write_cache,
            scale_step: 0,
            scaled_max: false,
            max_depth: 0,
            wb_normal: 0,
            wb_background: 0,
            cur_win_ns: RWB_WINDOW_NS,
            window: None,
            unknown_cnt: 0,
            pending: BinaryHeap::new(),
            pending_writes: 0,
            sync_read: None,
            woke_all_ns: None,
            stats: WbtStats::default(),
        };
        w.calc_max_depth();
        w.stats.max_depth_peak = w.max_depth;
        w
    }

    /// wbt_default_latency_nsec: the read latency target by the rotational flag.
    pub fn default_min_lat_ns(rotational: bool) -> u64 {
        if rotational {
            MIN_LAT_ROT_NS
        } else {
            MIN_LAT_NONROT_NS
        }
    }

    /// get_limit for a REQ_HIPRIO write: writes it lets in flight (no limit when off).
    pub fn write_limit(&self) -> u32 {
        if self.min_lat_ns == 0 {
            u32::MAX
        } else {
            self.max_depth
        }
    }

    /// When a scale-up last woke every writer asleep in wbt (rwb_wake_all).
    pub fn woke_all_ns(&self) -> Option<u64> {
        self.woke_all_ns
    }

    /// When the armed window ends (the next time the limit may change).
    pub fn window_end_ns(&self) -> Option<u64> {
        self.window.map(|(_, end)| end)
    }

    /// wbt_rqw_done with sleepers: does a completion that leaves `inflight` tracked writes in
    /// flight wake them? A write-back cache drains to 0 first (unless wb_recent_wait).
    pub fn rqw_done_wakes(&self, inflight: u32) -> bool {
        let limit = if self.write_cache { 0 } else { self.wb_normal };
        if inflight > 0 && inflight >= limit {
            return false;
        }
        inflight == 0 || limit - inflight >= self.wb_background / 2
    }

    /// The most tracked writes in flight at which a completion wakes the sleepers.
    pub fn wake_inflight(&self) -> u32 {
        (0..self.max_depth.max(1))
            .rev()
            .find(|&n| self.rqw_done_wakes(n))
            .unwrap_or(0)
    }

    /// rq_depth_calc_max_depth, then calc_wb_limits: returns true when the depth hit its
    /// ceiling (3/4 of the tags).
    fn calc_max_depth(&mut self) -> bool {
        let at_max = self.rq_depth_calc_max_depth();
        (self.wb_normal, self.wb_background) = if self.min_lat_ns == 0 {
            (0, 0)
        } else if self.max_depth <= 2 {
            (self.max_depth, 1)
        } else {
            // calc_wb_limits: (max_depth + 1) / 2 and (max_depth + 3) / 4.
            (self.max_depth.div_ceil(2), self.max_depth.div_ceil(4))
        };
        at_max
    }

    /// rq_depth_calc_max_depth.
    fn rq_depth_calc_max_depth(&mut self) -> bool {
        let qd = self.queue_depth;
        if qd == 1 {
            self.max_depth = if self.scale_step > 0 { 1 } else { 2 };
            return self.scale_step <= 0;
        }
        let depth = RWB_DEF_DEPTH.min(qd);
        let mut at_max = false;
        self.max_depth = if self.scale_step > 0 {
            1 + ((depth - 1) >> self.scale_step.min(31))
        } else if self.scale_step < 0 {
            let maxd = 3 * qd / 4;
            let d = 1u64 + (((depth - 1) as u64) << (-self.scale_step).min(32));
            at_max = d > maxd as u64;
            d.min(maxd as u64) as u32
        } else {
            depth
        };
        at_max
    }

    /// rq_depth_scale_up (via wbt's scale_up).
    fn scale_up(&mut self) {
        if self.scaled_max {
            return;
        }
        self.scale_step -= 1;
        self.scaled_max = self.calc_max_depth();
        self.unknown_cnt = 0;
        self.stats.scale_ups += 1;
        self.stats.max_depth_peak = self.stats.max_depth_peak.max(self.max_depth);
    }

    /// rq_depth_scale_down: `hard` (a latency miss) drops a negative step straight to 0.
    fn scale_down(&mut self, hard: bool) {
        if self.max_depth == 1 {
            return;
        }
        if self.scale_step < 0 && hard {
            self.scale_step = 0;
        } else {
            self.scale_step += 1;
        }
        self.scaled_max = false;
        self.calc_max_depth();
        self.unknown_cnt = 0;
        self.stats.scale_downs += 1;
    }

    /// wbt_wait's rwb_arm_timer for a tracked write that got in, with the timer idle.
    pub fn on_write_issued(&mut self, now_ns: u64) {
        if self.min_lat_ns != 0 && self.window.is_none() {
            self.arm(now_ns);
        }
    }

    /// A request the device took at `now_ns` that completes at `done_ns`.
    pub fn on_dispatch(&mut self, now_ns: u64, is_read: bool, done_ns: u64) {
        if self.min_lat_ns == 0 {
            return;
        }
        self.pending
            .push(Reverse((done_ns, is_read, done_ns.saturating_sub(now_ns))));
        if is_read {
            // wbt_issue: track a read when none is tracked (or the tracked one is done).
            if self.sync_read.is_none_or(|(_, done)| done <= now_ns) {
                self.sync_read = Some((now_ns, done_ns));
            }
        } else {
            self.pending_writes += 1;
        }
    }

    /// rwb_arm_timer: the window's length by step (100 ms / sqrt(step + 1) when scaled down).
    fn arm(&mut self, start_ns: u64) {
        self.cur_win_ns = if self.scale_step > 0 {
            (RWB_WINDOW_NS << 4) / int_sqrt(((self.scale_step + 1) as u64) << 8)
        } else {
            RWB_WINDOW_NS
        };
        self.window = Some((start_ns, start_ns + self.cur_win_ns));
    }

    /// Run every window timer that expired by `now_ns`, in order.
    pub fn advance(&mut self, now_ns: u64) {
        while let Some((start, end)) = self.window.filter(|&(_, end)| end <= now_ns) {
            let stat = self.drain(start, end);
            self.wb_timer_fn(end, stat);
        }
    }

    /// The completions of [start, end); earlier ones (timer idle) are not counted.
    fn drain(&mut self, start: u64, end: u64) -> WindowStat {
        let mut s = WindowStat {
            read_min_ns: u64::MAX,
            ..WindowStat::default()
        };
        while let Some(&Reverse((done, is_read, lat))) = self.pending.peek() {
            if done >= end {
                break;
            }
            self.pending.pop();
            if !is_read {
                self.pending_writes -= 1;
            }
            if done < start {
                continue;
            }
            if is_read {
                s.reads += 1;
                s.read_min_ns = s.read_min_ns.min(lat);
            } else {
                s.writes += 1;
            }
        }
        s
    }

    /// wb_timer_fn at `end_ns`: judge the window, scale, re-arm while scaled or busy.
    fn wb_timer_fn(&mut self, end_ns: u64, stat: WindowStat) {
        self.stats.windows += 1;
        let inflight = self.pending_writes;
        let ups = self.stats.scale_ups;
        match self.latency_exceeded(end_ns, stat, inflight) {
            LatStatus::Exceeded => self.scale_down(true),
            LatStatus::Ok | LatStatus::UnknownWrites => self.scale_up(),
            LatStatus::Unknown => {
                self.unknown_cnt += 1;
                if self.unknown_cnt >= RWB_UNKNOWN_BUMP {
                    if self.scale_step > 0 {
                        self.scale_up();
                    } else if self.scale_step < 0 {
                        self.scale_down(false);
                    }
                }
            }
        }
        if self.stats.scale_ups > ups {
            self.woke_all_ns = Some(end_ns);
        }
        if self.scale_step != 0 || inflight > 0 {
            self.arm(end_ns);
        } else {
            self.window = None;
        }
    }

    /// latency_exceeded: a read stuck past the window (or past the target with no read
    /// done), then the read/write mix, then the window's fastest read against the target.
    fn latency_exceeded(&self, now_ns: u64, s: WindowStat, inflight: u32) -> LatStatus {
        let sync_lat = match self.sync_read {
            Some((issue, done)) if done > now_ns => now_ns.saturating_sub(issue),
            _ => 0,
        };
        if sync_lat > self.cur_win_ns || (sync_lat > self.min_lat_ns && s.reads == 0) {
            return LatStatus::Exceeded;
        }
        if s.reads == 0 || s.writes < RWB_MIN_WRITE_SAMPLES {
            if s.writes > 0 || inflight > 0 {
                return LatStatus::UnknownWrites;
            }
            return LatStatus::Unknown;
        }
        if s.read_min_ns > self.min_lat_ns {
            return LatStatus::Exceeded;
        }
        LatStatus::Ok
    }
}

/// int_sqrt: the integer square root (floor).
fn int_sqrt(x: u64) -> u64 {
    let mut r = (x as f64).sqrt() as u64;
    while r * r > x {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= x {
        r += 1;
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn the_depth_follows_rq_depth_calc_max_depth() {
        let mut w = Wbt::new(MIN_LAT_ROT_NS, 256, false);
        assert_eq!(w.write_limit(), 16);
        let mut depths = vec![];
        for _ in 0..6 {
            w.scale_up();
            depths.push(w.write_limit());
        }
        // 1 + 15 << 1, << 2, << 3, then 3/4 of 256 (scaled_max stops further steps).
        assert_eq!(depths, [31, 61, 121, 192, 192, 192]);
        assert_eq!(w.scale_step, -4);
        w.scale_down(true);
        assert_eq!((w.scale_step, w.write_limit()), (0, 16));
        w.scale_down(true);
        assert_eq!(w.write_limit(), 8, "1 + (15 >> 1)");
        assert_eq!(
            Wbt::new(0, 256, false).write_limit(),
            u32::MAX,
            "min_lat 0: wbt off"
        );
        assert_eq!(Wbt::new(MIN_LAT_NONROT_NS, 8, false).write_limit(), 8);
    }

    #[test]
    fn write_only_windows_scale_up_and_a_slow_read_scales_down() {
        let mut w = Wbt::new(MIN_LAT_ROT_NS, 64, false);
        w.on_write_issued(0);
        // Writes completing through four windows, no reads: LAT_UNKNOWN_WRITES each time.
        for i in 0..40 {
            w.on_dispatch(i * 10 * MS, false, i * 10 * MS + 5 * MS);
        }
        w.advance(200 * MS - 1);
        assert_eq!(w.write_limit(), 31, "one window ended");
        w.advance(200 * MS);
        assert_eq!(w.write_limit(), 48, "then 3/4 of 64, the ceiling");
        // A window with reads slower than 75 ms and writes: LAT_EXCEEDED, back to step 0.
        for i in 0..4 {
            w.on_dispatch(400 * MS + i * MS, false, 410 * MS + i * MS);
        }
        w.on_dispatch(390 * MS, true, 480 * MS);
        w.advance(500 * MS);
        assert_eq!(w.write_limit(), 16);
        assert_eq!(w.stats.max_depth_peak, 48);
        // Nothing in flight and step 0: the timer stops, the depth stays.
        w.advance(10_000 * MS);
        assert_eq!(w.window_end_ns(), None);
        assert_eq!(w.write_limit(), 16);
    }

    #[test]
    fn a_read_within_target_lets_the_depth_grow_and_an_idle_queue_drifts_back() {
        let mut w = Wbt::new(MIN_LAT_NONROT_NS, 64, false);
        w.on_write_issued(0);
        for i in 0..3 {
            w.on_dispatch(i * MS, false, 10 * MS + i * MS);
        }
        w.on_dispatch(20 * MS, true, 21 * MS);
        w.advance(100 * MS);
        assert_eq!(w.write_limit(), 31, "LAT_OK: 1 ms read, 2 ms target");
        // Idle from here: five LAT_UNKNOWN windows per step back towards step 0.
        w.advance(600 * MS - 1);
        assert_eq!(w.write_limit(), 31);
        w.advance(600 * MS);
        assert_eq!(w.write_limit(), 16);
        w.advance(700 * MS);
        assert_eq!(w.window_end_ns(), None);
    }

    #[test]
    fn wbt_rqw_done_wakes_at_zero_with_a_write_back_cache_else_below_wb_normal() {
        let wc = Wbt::new(MIN_LAT_ROT_NS, 256, true);
        assert_eq!(
            (wc.wb_normal, wc.wb_background),
            (8, 4),
            "calc_wb_limits of 16"
        );
        assert!(wc.rqw_done_wakes(0));
        assert!(!wc.rqw_done_wakes(1));
        assert_eq!(wc.wake_inflight(), 0);
        let mut nowc = Wbt::new(MIN_LAT_ROT_NS, 256, false);
        // limit wb_normal 8: 7 is below it but 8 - 7 < 4 / 2; 6 wakes.
        assert!(!nowc.rqw_done_wakes(8) && !nowc.rqw_done_wakes(7));
        assert!(nowc.rqw_done_wakes(6) && nowc.rqw_done_wakes(0));
        assert_eq!(nowc.wake_inflight(), 6);
        for _ in 0..4 {
            nowc.scale_up();
        }
        // Depth 192: wb_normal 96, wb_background 48, so the sleepers wake at 72.
        assert_eq!(
            (nowc.max_depth, nowc.wb_normal, nowc.wb_background),
            (192, 96, 48)
        );
        assert_eq!(nowc.wake_inflight(), 72);
    }

    #[test]
    fn int_sqrt_floors() {
        assert_eq!((int_sqrt(512), int_sqrt(256), int_sqrt(255)), (22, 16, 15));
    }
}
