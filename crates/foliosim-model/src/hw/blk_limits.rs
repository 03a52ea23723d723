//! A request queue's size limits (struct queue_limits, block/blk-settings.c) and the checks
//! block/blk-merge.c makes with them: how far a bio is split (bio_split_to_limits) and whether
//! a request may take one more bio (ll_back_merge_fn -> ll_new_hw_segment). A request grows
//! until either its bytes reach max_sectors_kb or its segments reach max_segments, whichever
//! comes first; the segments of merged bios add up, contiguous or not (the request's
//! nr_phys_segments is the sum of its bios'), so on a queue with a large max_sectors_kb it is
//! max_segments that caps a request of single-page bios (vda: 254 x 4 KiB = 1016 KiB).

/// BLK_MIN_SEGMENT_SIZE: the smallest max_segment_size the block layer accepts.
pub const MIN_SEGMENT_BYTES: u64 = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueLimits {
    /// /sys/block/<dev>/queue/max_sectors_kb, in bytes: the largest request.
    pub max_sectors_bytes: u64,
    /// /sys/block/<dev>/queue/max_segments: scatter-gather entries one request may carry.
    pub max_segments: u32,
    /// /sys/block/<dev>/queue/max_segment_size: the largest one entry may be.
    pub max_segment_bytes: u64,
}

impl QueueLimits {
    /// Segments of a bio holding one folio of `bytes`: a folio is physically contiguous, so
    /// one segment per max_segment_size (bio_split_rw_at -> bvec_split_segs; the segment
    /// boundary mask is taken as no tighter than the folio's alignment).
    pub fn bio_segments(&self, bytes: u64) -> u32 {
        let segs = bytes.div_ceil(self.max_segment_bytes.max(MIN_SEGMENT_BYTES));
        u32::try_from(segs).unwrap_or(u32::MAX).max(1)
    }

    /// The most bytes of one folio's bio a request can hold: bio_split_to_limits splits a
    /// bio past max_sectors or past max_segments segments.
    pub fn max_bio_bytes(&self) -> u64 {
        let by_segments = self
            .max_segment_bytes
            .max(MIN_SEGMENT_BYTES)
            .saturating_mul(self.max_segments.max(1) as u64);
        self.max_sectors_bytes
            .min(by_segments)
            .max(MIN_SEGMENT_BYTES)
    }

    /// ll_back_merge_fn: may a request of `rq_bytes` in `rq_segments` segments take a bio of
    /// `bio_bytes` (blk_rq_get_max_sectors, then ll_new_hw_segment's segment count)?
    pub fn back_mergeable(&self, rq_bytes: u64, rq_segments: u32, bio_bytes: u64) -> bool {
        rq_bytes + bio_bytes <= self.max_sectors_bytes
            && rq_segments as u64 + self.bio_segments(bio_bytes) as u64 <= self.max_segments as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This VM's vda (/sys/block/vda/queue, 2026-11-28).
    const VDA: QueueLimits = QueueLimits {
        max_sectors_bytes: 4096 << 10,
        max_segments: 254,
        max_segment_bytes: 4_294_967_295,
    };

    #[test]
    fn single_page_bios_fill_a_request_at_max_segments_before_max_sectors() {
        let page = 4096;
        let mut rq_bytes = page;
        let mut segs = VDA.bio_segments(page);
        while VDA.back_mergeable(rq_bytes, segs, page) {
            rq_bytes += page;
            segs += VDA.bio_segments(page);
        }
        assert_eq!((segs, rq_bytes), (254, 1016 << 10));
    }

    #[test]
    fn large_folios_fill_a_request_at_max_sectors() {
        let folio = 64 << 10;
        assert_eq!(VDA.bio_segments(folio), 1);
        assert!(VDA.back_mergeable(4032 << 10, 63, folio));
        assert!(!VDA.back_mergeable(4096 << 10, 64, folio), "4 MiB is full");
    }

    #[test]
    fn a_small_max_segment_size_splits_a_folio_into_segments_and_caps_the_bio() {
        // An AHCI disk: 168 segments of at most 64 KiB.
        let ahci = QueueLimits {
            max_sectors_bytes: 1280 << 10,
            max_segments: 168,
            max_segment_bytes: 64 << 10,
        };
        assert_eq!(ahci.bio_segments(2 << 20), 32);
        assert_eq!(ahci.max_bio_bytes(), 1280 << 10);
        let few = QueueLimits {
            max_segments: 4,
            ..ahci
        };
        assert_eq!(few.max_bio_bytes(), 256 << 10, "4 segments of 64 KiB");
        assert!(
            !few.back_mergeable(128 << 10, 2, 192 << 10),
            "3 more segments"
        );
    }
}
