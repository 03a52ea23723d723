//! A task's plug (block/blk-core.c blk_start_plug / blk_finish_plug, block/blk-mq.c): between
//! the two, a request the task builds holds its tag but waits in the plug instead of going to
//! the device, and the task's next bio that continues the plug's last request joins it
//! (blk_attempt_plug_merge, while ll_back_merge_fn allows: hw/blk_limits.rs). So a reclaimer
//! writing one 4 KiB folio at a time still builds requests as large as the queue's limits.
//! The plug goes to the device (blk_mq_flush_plug_list) when the task finishes it, before the
//! task sleeps (io_schedule_prepare / sched_submit_work: blk_flush_plug), and when a new
//! request finds BLK_MAX_REQUEST_COUNT requests plugged or the last one at least
//! BLK_PLUG_FLUSH_SIZE (blk_add_rq_to_plug). The queue keeps each CPU's plugged requests
//! (hw/blk_mq.rs): a plugged section never spans a step, so the CPU's running task owns them.
//! Counted per queue: the kernel's one list per task counts every queue's requests together
//! and allows twice as many with several queues (multiple_queues).

use super::blk_limits::QueueLimits;
use super::blk_mq::Dir;
use crate::scenario::PAGE_SIZE;

/// BLK_MAX_REQUEST_COUNT (block/blk.h; 32 since late 2021, 16 before): requests a plug
/// holds before the next one flushes it.
pub const BLK_MAX_REQUEST_COUNT: usize = 32;
/// BLK_PLUG_FLUSH_SIZE (block/blk.h): a plug whose last request holds this much flushes
/// before it takes another request.
pub const BLK_PLUG_FLUSH_SIZE_BYTES: u64 = 128 << 10;

/// A request in a plug: it holds a tag (and wbt's count), the device has not seen it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluggedRequest {
    pub dir: Dir,
    /// The page (slot or block) right after its last one.
    pub end_page: u64,
    pub bytes: u64,
    /// nr_phys_segments: the sum of its bios' segments.
    pub segments: u32,
    /// When it took its tag: the disk's write ticks count from there.
    pub tag_ns: u64,
    /// The submitters' marks of its bios (the folio each writes), told its completion.
    pub tokens: Vec<u32>,
}

/// The requests one CPU's running task has plugged for one queue, oldest first.
#[derive(Debug, Clone, Default)]
pub struct BlkPlug {
    rqs: Vec<PluggedRequest>,
}

impl BlkPlug {
    pub fn is_empty(&self) -> bool {
        self.rqs.is_empty()
    }

    /// Plugged requests of `dir`, or of both directions.
    pub fn count(&self, dir: Option<Dir>) -> usize {
        self.rqs
            .iter()
            .filter(|r| dir.is_none_or(|d| d == r.dir))
            .count()
    }

    /// blk_attempt_plug_merge: the plug's last request takes a bio of `bytes` at `pos` that
    /// continues it, if the limits let it grow (the bio's `token` joins its tokens).
    pub fn attempt_merge(
        &mut self,
        limits: &QueueLimits,
        dir: Dir,
        pos: u64,
        bytes: u64,
        token: Option<u32>,
    ) -> bool {
        let Some(rq) = self.rqs.last_mut() else {
            return false;
        };
        if rq.dir != dir
            || rq.end_page != pos
            || !limits.back_mergeable(rq.bytes, rq.segments, bytes)
        {
            return false;
        }
        rq.bytes += bytes;
        rq.segments += limits.bio_segments(bytes);
        rq.end_page += bytes / PAGE_SIZE;
        rq.tokens.extend(token);
        true
    }

    /// blk_add_rq_to_plug's test before it adds a request: a full plug, or one whose last
    /// request is large enough, goes to the device first.
    pub fn must_flush(&self) -> bool {
        self.rqs.last().is_some_and(|last| {
            self.rqs.len() >= BLK_MAX_REQUEST_COUNT || last.bytes >= BLK_PLUG_FLUSH_SIZE_BYTES
        })
    }

    /// blk_add_rq_to_plug, after [`BlkPlug::must_flush`] was dealt with.
    pub fn add(&mut self, rq: PluggedRequest) {
        debug_assert!(self.rqs.len() < BLK_MAX_REQUEST_COUNT);
        self.rqs.push(rq);
    }

    /// The mark of the bio plugged last: the only one whose submitter may still add bios
    /// (its next ones continue it, or start the next request).
    pub fn last_token(&self) -> Option<u32> {
        self.rqs.last().and_then(|rq| rq.tokens.last().copied())
    }

    /// blk_mq_flush_plug_list: every request, in the order they were plugged.
    pub fn take(&mut self) -> Vec<PluggedRequest> {
        std::mem::take(&mut self.rqs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// vda: 4 MiB requests of at most 254 segments.
    const VDA: QueueLimits = QueueLimits {
        max_sectors_bytes: 4096 << 10,
        max_segments: 254,
        max_segment_bytes: 4_294_967_295,
    };

    fn rq(end_page: u64, bytes: u64) -> PluggedRequest {
        PluggedRequest {
            dir: Dir::Write,
            end_page,
            bytes,
            segments: VDA.bio_segments(bytes),
            tag_ns: 0,
            tokens: vec![0],
        }
    }

    #[test]
    fn page_bios_that_continue_the_last_request_join_it_up_to_max_segments() {
        let mut plug = BlkPlug::default();
        plug.add(rq(1, PAGE_SIZE));
        let mut pos = 1;
        while plug.attempt_merge(&VDA, Dir::Write, pos, PAGE_SIZE, Some(pos as u32)) {
            pos += 1;
        }
        assert_eq!(pos, 254, "254 single-page segments: 1016 KiB");
        assert!(!plug.attempt_merge(&VDA, Dir::Read, pos, PAGE_SIZE, None));
        let rqs = plug.take();
        assert_eq!((rqs.len(), rqs[0].bytes), (1, 254 * PAGE_SIZE));
        assert_eq!(rqs[0].tokens.len(), 254);
        assert!(plug.is_empty());
    }

    #[test]
    fn a_bio_elsewhere_is_not_merged() {
        let mut plug = BlkPlug::default();
        plug.add(rq(10, PAGE_SIZE));
        assert!(!plug.attempt_merge(&VDA, Dir::Write, 11, PAGE_SIZE, None));
        assert!(!plug.attempt_merge(&VDA, Dir::Write, 9, PAGE_SIZE, None));
        assert_eq!(plug.count(Some(Dir::Write)), 1);
    }

    #[test]
    fn the_plug_flushes_at_32_requests_or_behind_a_128k_one() {
        let mut plug = BlkPlug::default();
        assert!(!plug.must_flush(), "an empty plug takes a request");
        for i in 0..BLK_MAX_REQUEST_COUNT as u64 {
            assert!(!plug.must_flush());
            plug.add(rq(10 * i + 1, PAGE_SIZE));
        }
        assert!(plug.must_flush(), "32 small requests");
        plug.take();
        plug.add(rq(32, 31 * PAGE_SIZE));
        assert!(!plug.must_flush(), "124 KiB");
        assert!(plug.attempt_merge(&VDA, Dir::Write, 32, PAGE_SIZE, None));
        assert!(plug.must_flush(), "128 KiB");
    }
}
