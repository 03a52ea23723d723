//! Page content: what a workload writes into its anonymous memory.
//!
//! Content matters to the model only through compression (zswap, zram) and the checks that
//! skip it (swap's zeromap, zswap's same-filled test). A folio carries a [`ContentClass`];
//! [`ContentClass::fill_page`] produces the bytes of one 4 KiB page of that class,
//! deterministically from a page key, so that hw/compressor.rs can compress a sample of real
//! pages with real codecs.

use rand_core::{RngCore, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// Bytes in one base page (x86-64 and the 4K arm64 configurations the seeds use).
pub const PAGE_BYTES: usize = crate::scenario::PAGE_SIZE as usize;

/// 8-byte words in one page.
const WORDS_PER_PAGE: u64 = (PAGE_BYTES / 8) as u64;

/// Real memory of a python3 process, captured on the development VM (data/README.md).
static PROCESS_SAMPLE: &[u8] = include_bytes!("../data/process-heap.bin");

/// What a page holds: plain data of the schema (scenario/spec_types.rs).
pub use crate::scenario::ContentClass;

/// A content class name that is not one of [`ContentClass::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown content class {0:?}; expected one of: usemem, zero, same-filled, random, text, process-sample")]
pub struct UnknownContentClass(pub String);

impl ContentClass {
    pub const ALL: [ContentClass; 6] = [
        ContentClass::Usemem,
        ContentClass::Zero,
        ContentClass::SameFilled,
        ContentClass::Random,
        ContentClass::Text,
        ContentClass::ProcessSample,
    ];

    /// Position in [`ContentClass::ALL`]: a one-byte tag for per-slot tables.
    pub fn index(self) -> u8 {
        self as u8
    }

    /// The class of an [`index`](ContentClass::index).
    pub fn from_index(index: u8) -> ContentClass {
        ContentClass::ALL[index as usize]
    }

    /// The scenario name (serde's kebab-case).
    pub fn name(self) -> &'static str {
        match self {
            ContentClass::Usemem => "usemem",
            ContentClass::Zero => "zero",
            ContentClass::SameFilled => "same-filled",
            ContentClass::Random => "random",
            ContentClass::Text => "text",
            ContentClass::ProcessSample => "process-sample",
        }
    }

    pub fn from_name(name: &str) -> Result<ContentClass, UnknownContentClass> {
        ContentClass::ALL
            .into_iter()
            .find(|c| c.name() == name)
            .ok_or_else(|| UnknownContentClass(name.to_string()))
    }

    /// Write the content of page `page_key` into `buf` (normally [`PAGE_BYTES`] long; any
    /// length is filled, patterns continue past 4 KiB as they would in the next page).
    /// For `Usemem` the key is the page index in the VMA, so word i of page k holds k*512+i.
    pub fn fill_page(self, page_key: u64, buf: &mut [u8]) {
        match self {
            ContentClass::Usemem => {
                // usemem.c do_rw_once(): `p[i] = i` over unsigned longs from the mapping start.
                let first = page_key.wrapping_mul(WORDS_PER_PAGE);
                fill_words(buf, |i| first.wrapping_add(i));
            }
            ContentClass::Zero => buf.fill(0),
            ContentClass::SameFilled => {
                let w = same_filled_word(page_key);
                fill_words(buf, |_| w);
            }
            ContentClass::Random => rng_for(self, page_key).fill_bytes(buf),
            ContentClass::Text => fill_text(&mut rng_for(self, page_key), buf),
            ContentClass::ProcessSample => {
                let pages = (PROCESS_SAMPLE.len() / PAGE_BYTES).max(1) as u64;
                let mut off = (page_key % pages) as usize * PAGE_BYTES;
                for chunk in buf.chunks_mut(PAGE_BYTES) {
                    let src = &PROCESS_SAMPLE[off..off + PAGE_BYTES];
                    chunk.copy_from_slice(&src[..chunk.len()]);
                    off = (off + PAGE_BYTES) % (pages as usize * PAGE_BYTES);
                }
            }
        }
    }

    /// The page is all zero bytes: swap's zeromap takes it without a slot write, zswap stores
    /// no data for it.
    pub fn is_zero(self, page_key: u64) -> bool {
        match self {
            ContentClass::Zero => true,
            // Word 1 holds k*512+1, never 0 (the wrap would need a 2^64-byte mapping).
            ContentClass::Usemem | ContentClass::SameFilled => false,
            // A zero random page has probability 2^-32768; text is printable ASCII.
            ContentClass::Random | ContentClass::Text => false,
            ContentClass::ProcessSample => sample_page(page_key).iter().all(|&b| b == 0),
        }
    }

    /// The page is one 8-byte word repeated (zero included): zram's and zswap's same-filled
    /// check (`page_same_filled`) stores the word instead of compressing.
    pub fn same_filled(self, page_key: u64) -> bool {
        match self {
            ContentClass::Zero | ContentClass::SameFilled => true,
            ContentClass::Usemem | ContentClass::Random | ContentClass::Text => false,
            ContentClass::ProcessSample => {
                let p = sample_page(page_key);
                p.chunks_exact(8).all(|w| w == &p[..8])
            }
        }
    }
}

fn sample_page(page_key: u64) -> &'static [u8] {
    let pages = (PROCESS_SAMPLE.len() / PAGE_BYTES).max(1) as u64;
    let off = (page_key % pages) as usize * PAGE_BYTES;
    &PROCESS_SAMPLE[off..off + PAGE_BYTES]
}

/// Fill `buf` with little-endian 8-byte words `word(i)`; a short tail gets the word's prefix.
fn fill_words(buf: &mut [u8], word: impl Fn(u64) -> u64) {
    for (i, chunk) in buf.chunks_mut(8).enumerate() {
        let bytes = word(i as u64).to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
}

/// splitmix64: spreads consecutive keys over the whole 64-bit range.
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn same_filled_word(page_key: u64) -> u64 {
    // Non-zero by construction: a zero word would make it a Zero page.
    mix64(page_key ^ 0x5a5a_5a5a) | 1
}

/// One RNG per (class, page): a page's bytes never depend on which pages were drawn before.
fn rng_for(class: ContentClass, page_key: u64) -> Pcg64Mcg {
    let seed = ((mix64(page_key) as u128) << 64) | mix64(page_key ^ class as u64) as u128;
    Pcg64Mcg::from_seed(seed.to_le_bytes())
}

/// A small vocabulary of common English words; sentences drawn from it compress about as
/// ordinary prose does with LZ codecs (repeated words, short distances).
const WORDS: &[&str] = &[
    "the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was", "with", "be",
    "by", "on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have",
    "an", "had", "they", "you", "were", "their", "one", "all", "we", "can", "her", "has", "there",
    "been", "if", "more", "when", "will", "would", "who", "so", "no", "memory", "page", "system",
    "time", "process", "first", "new", "other", "some", "could", "into", "than", "then", "only",
    "its", "two", "over", "may", "after", "most", "also", "made", "many", "before", "must",
    "through", "back", "years", "where", "much", "your", "way", "well", "down", "should",
    "because", "each", "just", "those", "people", "how", "too", "little", "state", "good", "very",
    "make", "world", "still", "own", "see", "men", "work", "long", "get", "here", "between",
    "both", "life", "being", "under", "never", "day", "same", "another", "know", "while", "last",
    "might", "great", "old", "year", "off", "come", "since", "against", "go", "came", "right",
    "used", "take", "three", "kernel", "file", "data", "number", "small", "large", "without",
    "again", "place", "around", "however", "home", "found", "thought",
];

fn fill_text(rng: &mut Pcg64Mcg, buf: &mut [u8]) {
    let mut pos = 0;
    let mut sentence_start = true;
    let mut words_in_sentence = 0u32;
    while pos < buf.len() {
        let r = rng.next_u32();
        let w = WORDS[(r as usize >> 8) % WORDS.len()].as_bytes();
        for (j, &b) in w.iter().enumerate() {
            if pos == buf.len() {
                return;
            }
            buf[pos] = if j == 0 && sentence_start {
                b.to_ascii_uppercase()
            } else {
                b
            };
            pos += 1;
        }
        sentence_start = false;
        words_in_sentence += 1;
        // End a sentence after 4-19 words; a paragraph break after about one in eight.
        let sep: &[u8] = if words_in_sentence >= 4 + (r & 15) {
            words_in_sentence = 0;
            sentence_start = true;
            if r & 0x70 == 0 {
                b".\n\n"
            } else {
                b". "
            }
        } else if r & 0xf0 == 0x80 {
            b", "
        } else {
            b" "
        };
        for &b in sep {
            if pos == buf.len() {
                return;
            }
            buf[pos] = b;
            pos += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usemem_word_holds_its_index() {
        let mut p = [0u8; PAGE_BYTES];
        ContentClass::Usemem.fill_page(3, &mut p);
        let w = |i: usize| u64::from_le_bytes(p[i * 8..i * 8 + 8].try_into().unwrap());
        assert_eq!(w(0), 3 * 512);
        assert_eq!(w(511), 3 * 512 + 511);
    }

    #[test]
    fn names_and_indices_round_trip() {
        for c in ContentClass::ALL {
            assert_eq!(ContentClass::from_name(c.name()), Ok(c));
            assert_eq!(ContentClass::from_index(c.index()), c);
        }
        assert!(ContentClass::from_name("zeros").is_err());
    }
}
