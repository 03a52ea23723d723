//! Compressors: real codecs run on real page content.
//!
//! A compressed size is never a guessed ratio: [`size_sample`] compresses a deterministic sample
//! of pages of one [`ContentClass`] with the real codec, once per process, and the model draws
//! per-page sizes from that sample by page key ([`SizeSample::compressed_len`]), so a run over
//! millions of pages stays fast and bit-for-bit reproducible.
//!
//! Codecs (kernel names as in /sys/block/zramN/comp_algorithm and zswap's `compressor`):
//! - `lzo`, `lzo-rle`: our LZO1X-1 encoder, written from the kernel's algorithm
//!   (lib/lzo/lzo1x_compress.c: 8192-entry u16 hash dictionary, the `1 + (ip - ii) >> 5` skip,
//!   x86-64 match-length rules) with the lzo-rle zero-run instruction; it emits the kernel's
//!   byte stream, checked against the kernel's live ratios (docs/compression.md) and, for
//!   `lzo`, decoded by the independent `lzokay-native` decoder in tests.
//! - `lz4`: `lz4_flex` block format (LZ4 fast, acceleration 1, as zram's backend_lz4).
//! - `lz4hc`: the reference C liblz4 through the `lz4` crate, HC level 9 (the kernel default).
//! - `zstd`: the `zstd` crate (C libzstd), level 3, one frame per page as the kernel emits.
//! - `deflate`: `miniz_oxide` raw deflate, level 6 (Z_DEFAULT_COMPRESSION, as zram and the
//!   crypto API use); the kernel's 2 KiB window (winbits 11) is not modelled.
//! - `deflate-iaa`: Intel IAA's default "fixed" mode emits deflate with static Huffman blocks
//!   only: `miniz_oxide` level 6 with the Fixed strategy. Its LZ77 matcher is the software one,
//!   not the accelerator's; its CPU cost is the accelerator model's, not a codec cost.

use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Serialize};

use crate::content::{mix64, ContentClass, PAGE_BYTES};
use crate::engine::cost::CostModel;

/// A compression algorithm, by its kernel name.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "kebab-case")]
pub enum Codec {
    /// zram's default since 5.1: LZO1X-1 with a zero-run instruction (bitstream version 1).
    #[default]
    LzoRle,
    Lzo,
    Lz4,
    Lz4hc,
    Zstd,
    Deflate,
    /// Intel In-Memory Analytics Accelerator (iaa_crypto), fixed-Huffman deflate.
    DeflateIaa,
}

/// A codec name that is not one of [`Codec::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown compressor {0:?}; expected one of: lzo-rle, lzo, lz4, lz4hc, zstd, deflate, deflate-iaa"
)]
pub struct UnknownCodec(pub String);

/// A compressed stream that does not decode to the page it should.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{codec}: corrupt compressed data ({why})")]
pub struct DecompressError {
    pub codec: &'static str,
    pub why: String,
}

impl Codec {
    pub const ALL: [Codec; 7] = [
        Codec::LzoRle,
        Codec::Lzo,
        Codec::Lz4,
        Codec::Lz4hc,
        Codec::Zstd,
        Codec::Deflate,
        Codec::DeflateIaa,
    ];

    /// The kernel's name (zram comp_algorithm, zswap compressor, /proc/crypto).
    pub fn name(self) -> &'static str {
        match self {
            Codec::LzoRle => "lzo-rle",
            Codec::Lzo => "lzo",
            Codec::Lz4 => "lz4",
            Codec::Lz4hc => "lz4hc",
            Codec::Zstd => "zstd",
            Codec::Deflate => "deflate",
            Codec::DeflateIaa => "deflate-iaa",
        }
    }

    pub fn from_name(name: &str) -> Result<Codec, UnknownCodec> {
        Codec::ALL
            .into_iter()
            .find(|c| c.name() == name)
            .ok_or_else(|| UnknownCodec(name.to_string()))
    }

    /// Compression runs on an accelerator, not on the CPU that asks for it.
    pub fn is_hardware(self) -> bool {
        matches!(self, Codec::DeflateIaa)
    }

    /// The compressed stream, as the kernel's backend would produce it for `page`.
    pub fn compress(self, page: &[u8]) -> Vec<u8> {
        match self {
            Codec::LzoRle => lzo1x_1_compress(page, true),
            Codec::Lzo => lzo1x_1_compress(page, false),
            Codec::Lz4 => lz4_flex::block::compress(page),
            // Only an allocation failure or a > 2 GiB input makes liblz4 fail; an empty result
            // then reads as incompressible rather than panicking.
            Codec::Lz4hc => lz4::block::compress(
                page,
                Some(lz4::block::CompressionMode::HIGHCOMPRESSION(9)),
                false,
            )
            .unwrap_or_else(|_| page.to_vec()),
            Codec::Zstd => zstd::bulk::compress(page, 3).unwrap_or_else(|_| page.to_vec()),
            Codec::Deflate => miniz_oxide::deflate::compress_to_vec(page, 6),
            Codec::DeflateIaa => deflate_fixed(page),
        }
    }

    /// Bytes the codec's output takes for `page` (before any store-as-is fallback).
    pub fn compress_len(self, page: &[u8]) -> usize {
        self.compress(page).len()
    }

    /// Decode `data` produced by [`Codec::compress`] of an `orig_len`-byte input.
    pub fn decompress(self, data: &[u8], orig_len: usize) -> Result<Vec<u8>, DecompressError> {
        let err = |why: String| DecompressError {
            codec: self.name(),
            why,
        };
        let out = match self {
            Codec::LzoRle | Codec::Lzo => {
                lzo1x_decompress(data, orig_len).map_err(|w| err(w.into()))?
            }
            Codec::Lz4 => {
                lz4_flex::block::decompress(data, orig_len).map_err(|e| err(e.to_string()))?
            }
            Codec::Lz4hc => lz4::block::decompress(data, Some(orig_len as i32))
                .map_err(|e| err(e.to_string()))?,
            Codec::Zstd => {
                zstd::bulk::decompress(data, orig_len).map_err(|e| err(e.to_string()))?
            }
            Codec::Deflate | Codec::DeflateIaa => {
                miniz_oxide::inflate::decompress_to_vec_with_limit(data, orig_len)
                    .map_err(|e| err(format!("{e:?}")))?
            }
        };
        if out.len() != orig_len {
            return Err(err(format!("{} bytes, expected {orig_len}", out.len())));
        }
        Ok(out)
    }
}

/// Raw deflate with static (fixed) Huffman blocks only.
fn deflate_fixed(input: &[u8]) -> Vec<u8> {
    use miniz_oxide::deflate::core::{
        compress_to_output, create_comp_flags_from_zip_params, CompressionStrategy,
        CompressorOxide, TDEFLFlush,
    };
    let flags = create_comp_flags_from_zip_params(6, 0, CompressionStrategy::Fixed as i32);
    let mut d = CompressorOxide::new(flags);
    let mut out = Vec::with_capacity(input.len() / 2);
    compress_to_output(&mut d, input, TDEFLFlush::Finish, |b| {
        out.extend_from_slice(b);
        true
    });
    out
}

// ---------------------------------------------------------------------------------------------
// LZO1X-1, as the kernel's lzo1x_1_compress / lzorle1x_1_compress emit it.

const LZO_D_BITS: u32 = 13;
const LZO_M2_MAX_LEN: usize = 8;
const LZO_M2_MAX_OFFSET: usize = 0x0800;
const LZO_M3_MAX_OFFSET: usize = 0x4000;
const LZO_M3_MAX_LEN: usize = 33;
const LZO_M4_MAX_LEN: usize = 9;
const LZO_M3_MARKER: u8 = 32;
const LZO_M4_MARKER: u8 = 16;
/// A zero run needs one dword of zeroes; the instruction holds up to 2047 more.
const LZO_MIN_ZERO_RUN: usize = 4;
const LZO_MAX_ZERO_RUN: usize = 2047 + LZO_MIN_ZERO_RUN;
/// The longest match distance: version 1 gives up 0xbfff to mark zero runs.
const LZO_M4_MAX_OFFSET_V0: usize = 0xbfff;
const LZO_M4_MAX_OFFSET_V1: usize = 0xbffe;

fn le32(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    for (i, x) in w.iter_mut().enumerate() {
        *x = b.get(at + i).copied().unwrap_or(0);
    }
    u32::from_le_bytes(w)
}

fn le64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    for (i, x) in w.iter_mut().enumerate() {
        *x = b.get(at + i).copied().unwrap_or(0);
    }
    u64::from_le_bytes(w)
}

/// Append a literal-run length header for `t` > 3 literals (state 0/4 form: `t - 3`, or 0
/// followed by 255-steps).
fn lzo_literal_header(out: &mut Vec<u8>, t: usize) {
    if t <= 18 {
        out.push((t - 3) as u8);
    } else {
        let mut tt = t - 18;
        out.push(0);
        while tt > 255 {
            tt -= 255;
            out.push(0);
        }
        out.push(tt as u8);
    }
}

/// Length field in the 0 + 255-steps form shared by long M3/M4 matches.
fn lzo_long_len(out: &mut Vec<u8>, mut len: usize) {
    while len > 255 {
        len -= 255;
        out.push(0);
    }
    out.push(len as u8);
}

struct LzoState {
    out: Vec<u8>,
    /// How far back from the end of `out` is the byte whose low two bits carry a following
    /// run of 1-3 literals: 2 after a match, 3 after a zero run.
    state_at: usize,
}

impl LzoState {
    fn or_state(&mut self, t: usize) {
        // Only after an instruction (the first literal run is always > 3 bytes).
        if let Some(i) = self.out.len().checked_sub(self.state_at) {
            self.out[i] |= t as u8;
        }
    }

    /// A run of literals: 1-3 ride in the previous instruction's low bits, more get a header.
    fn literals(&mut self, lits: &[u8]) {
        let t = lits.len();
        if t == 0 {
            return;
        }
        if t <= 3 {
            self.or_state(t);
        } else {
            lzo_literal_header(&mut self.out, t);
        }
        self.out.extend_from_slice(lits);
    }

    /// lzo-rle's zero-run instruction: an M4 with a distance no match uses.
    fn zero_run(&mut self, run_length: usize) {
        let rl = (run_length - LZO_MIN_ZERO_RUN) as u32;
        self.out
            .extend_from_slice(&((rl << 21) | 0x00ff_fc18 | (rl & 7)).to_le_bytes());
        self.state_at = 3;
    }

    /// A match of `m_len` bytes `m_off` back, as the shortest of M2, M3 and M4 that holds it.
    /// Returns the length taken: lzo-rle shortens an M4 that would read as a zero run.
    fn matched(&mut self, mut m_len: usize, mut m_off: usize, rle: bool) -> usize {
        let out = &mut self.out;
        if m_len <= LZO_M2_MAX_LEN && m_off <= LZO_M2_MAX_OFFSET {
            m_off -= 1;
            out.push((((m_len - 1) << 5) | ((m_off & 7) << 2)) as u8);
            out.push((m_off >> 3) as u8);
        } else if m_off <= LZO_M3_MAX_OFFSET {
            m_off -= 1;
            if m_len <= LZO_M3_MAX_LEN {
                out.push(LZO_M3_MARKER | (m_len - 2) as u8);
            } else {
                out.push(LZO_M3_MARKER);
                lzo_long_len(out, m_len - LZO_M3_MAX_LEN);
            }
            out.push((m_off << 2) as u8);
            out.push((m_off >> 6) as u8);
        } else {
            m_off -= 0x4000;
            let hi = ((m_off >> 11) & 8) as u8;
            if m_len <= LZO_M4_MAX_LEN {
                out.push(LZO_M4_MARKER | hi | (m_len - 2) as u8);
            } else {
                if rle && (m_off & 0x403f) == 0x403f && (261..=264).contains(&m_len) {
                    m_len = 260;
                }
                out.push(LZO_M4_MARKER | hi);
                lzo_long_len(out, m_len - LZO_M4_MAX_LEN);
            }
            out.push((m_off << 2) as u8);
            out.push((m_off >> 6) as u8);
        }
        self.state_at = 2;
        m_len
    }
}

/// lzo-rle: the length of the zero run at `ip` (whose first 4 bytes are zero), at most
/// LZO_MAX_ZERO_RUN and ending before `ip_end`.
fn lzo_zero_run_len(input: &[u8], ip: usize, ip_end: usize) -> usize {
    let limit = ip_end.min(ip + LZO_MAX_ZERO_RUN + 1);
    let mut ir = ip + 4;
    while ir < limit && input[ir] == 0 {
        ir += 1;
    }
    (ir - ip).min(LZO_MAX_ZERO_RUN)
}

/// The length of the match of `ip` against `m_pos` (their first 4 bytes agree), x86-64 rules:
/// 8-byte compares, no extension once past `ip_end`.
fn lzo_match_len(input: &[u8], ip: usize, m_pos: usize, ip_end: usize) -> usize {
    let mut m_len = 4usize;
    let mut v = le64(input, ip + m_len) ^ le64(input, m_pos + m_len);
    if v == 0 {
        loop {
            m_len += 8;
            v = le64(input, ip + m_len) ^ le64(input, m_pos + m_len);
            if ip + m_len >= ip_end {
                return m_len;
            }
            if v != 0 {
                break;
            }
        }
    }
    m_len + (v.trailing_zeros() / 8) as usize
}

/// One block `input[start..start + ll]` (at most M4_MAX_OFFSET+1 bytes, more than 20), with
/// `carry` literals pending just before it. The dictionary holds offsets from `start`, as the
/// kernel's does. Returns the literals left pending at the block end.
fn lzo1x_1_block(
    input: &[u8],
    start: usize,
    ll: usize,
    carry: usize,
    st: &mut LzoState,
    rle: bool,
) -> usize {
    let block_end = start + ll;
    let ip_end = block_end - 20;
    let mut dict = vec![0u16; 1 << LZO_D_BITS];
    let mut ti = carry;
    let mut ii = start;
    let mut ip = start + 4usize.saturating_sub(ti);
    let mut skip = true;
    loop {
        if skip {
            // No match here: step further the longer the literal run (the kernel's skip).
            ip += 1 + ((ip - ii) >> 5);
        }
        skip = true;
        if ip >= ip_end {
            break;
        }
        let dv = le32(input, ip);
        let mut run_length = 0usize;
        let mut m_pos = 0usize;
        if dv == 0 && rle {
            run_length = lzo_zero_run_len(input, ip, ip_end);
        } else {
            let h = (dv.wrapping_mul(0x1824_429d) >> (32 - LZO_D_BITS)) as usize
                & ((1 << LZO_D_BITS) - 1);
            m_pos = start + dict[h] as usize;
            dict[h] = (ip - start) as u16;
            if dv != le32(input, m_pos) {
                continue;
            }
        }
        // Flush the literals since the last instruction (carried ones included).
        ii -= ti;
        ti = 0;
        st.literals(&input[ii..ip]);
        if run_length > 0 {
            st.zero_run(run_length);
            ip += run_length;
        } else {
            let m_len = lzo_match_len(input, ip, m_pos, ip_end);
            ip += st.matched(m_len, ip - m_pos, rle);
        }
        ii = ip;
        skip = false;
    }
    block_end - (ii - ti)
}

/// LZO1X-1 compression of `input`; `rle` selects lzo-rle (bitstream version 1).
pub fn lzo1x_1_compress(input: &[u8], rle: bool) -> Vec<u8> {
    let mut st = LzoState {
        out: Vec::with_capacity(input.len() + input.len() / 16 + 64),
        state_at: 2,
    };
    let m4_max = if rle {
        // Version 0 streams never start with 17, so "17, version" marks the bitstream.
        st.out.extend_from_slice(&[17, 1]);
        LZO_M4_MAX_OFFSET_V1
    } else {
        LZO_M4_MAX_OFFSET_V0
    };
    let data_start = st.out.len();
    let mut pos = 0;
    let mut t = 0usize;
    while input.len() - pos > 20 {
        let ll = (input.len() - pos).min(m4_max + 1);
        t = lzo1x_1_block(input, pos, ll, t, &mut st, rle);
        pos += ll;
    }
    t += input.len() - pos;
    let tail = &input[input.len() - t..];
    if st.out.len() == data_start && (1..=238).contains(&t) {
        // A stream that is all literals opens with their count.
        st.out.push((17 + t) as u8);
        st.out.extend_from_slice(tail);
    } else {
        st.literals(tail);
    }
    st.out.extend_from_slice(&[LZO_M4_MARKER | 1, 0, 0]);
    st.out
}

/// The LZO1X decoder's cursor: the input read so far and the output written, with the
/// overrun checks of the kernel's safe decoder (lib/lzo/lzo1x_decompress_safe.c).
struct LzoReader<'a> {
    src: &'a [u8],
    ip: usize,
    out: Vec<u8>,
    max_out: usize,
}

type LzoResult<T> = Result<T, &'static str>;

impl LzoReader<'_> {
    /// The input byte `ahead` of the cursor, not consumed.
    fn peek(&self, ahead: usize) -> LzoResult<usize> {
        let b = self.src.get(self.ip + ahead).ok_or("input overrun")?;
        Ok(*b as usize)
    }

    fn next(&mut self) -> LzoResult<usize> {
        let b = self.peek(0)?;
        self.ip += 1;
        Ok(b)
    }

    /// A little-endian 16-bit distance field, not consumed.
    fn peek_le16(&self) -> LzoResult<usize> {
        Ok(self.peek(0)? | self.peek(1)? << 8)
    }

    fn le16(&mut self) -> LzoResult<usize> {
        let d = self.peek_le16()?;
        self.ip += 2;
        Ok(d)
    }

    /// A length in the 0 + 255-steps form, plus `base`.
    fn long_len(&mut self, base: usize) -> LzoResult<usize> {
        let mut n = 0usize;
        while self.peek(0)? == 0 {
            n += 255;
            self.ip += 1;
        }
        Ok(n + base + self.next()?)
    }

    fn room_for(&self, n: usize) -> LzoResult<()> {
        if self.out.len() + n > self.max_out {
            return Err("output overrun");
        }
        Ok(())
    }

    fn literals(&mut self, n: usize) -> LzoResult<()> {
        let s = self.src.get(self.ip..self.ip + n).ok_or("input overrun")?;
        self.room_for(n)?;
        self.out.extend_from_slice(s);
        self.ip += n;
        Ok(())
    }

    fn copy_match(&mut self, dist: usize, n: usize) -> LzoResult<()> {
        if dist == 0 || dist > self.out.len() {
            return Err("lookbehind overrun");
        }
        self.room_for(n)?;
        // Overlapping copies repeat the last `dist` bytes: copy in steps of at most `dist`.
        let from = self.out.len() - dist;
        let mut left = n;
        while left > 0 {
            let step = left.min(self.out.len() - from);
            self.out.extend_from_within(from..from + step);
            left -= step;
        }
        Ok(())
    }

    /// Instruction 0-15 after literals (state 1-3: a 2-byte match near; 4: 3 bytes, far).
    /// Returns the literals that follow.
    fn m1(&mut self, t: usize, state: usize) -> LzoResult<usize> {
        let dist_lo = (t >> 2) + (self.next()? << 2);
        if state != 4 {
            self.copy_match(dist_lo + 1, 2)?;
        } else {
            self.copy_match(dist_lo + 1 + LZO_M2_MAX_OFFSET, 3)?;
        }
        Ok(t & 3)
    }

    /// Instruction 64-255: a match of 3-8 bytes up to 2 KiB back.
    fn m2(&mut self, t: usize) -> LzoResult<usize> {
        let dist = ((t >> 2) & 7) + (self.next()? << 3) + 1;
        self.copy_match(dist, (t >> 5) + 1)?;
        Ok(t & 3)
    }

    /// Instruction 32-63: a match up to 16 KiB back.
    fn m3(&mut self, t: usize) -> LzoResult<usize> {
        let mut n = (t & 31) + 2;
        if n == 2 {
            n = self.long_len(31)? + 2;
        }
        let d = self.le16()?;
        self.copy_match((d >> 2) + 1, n)?;
        Ok(d & 3)
    }

    /// Instruction 16-31: a far match, lzo-rle's zero run, or the end of the stream (None).
    fn m4(&mut self, t: usize, version: usize) -> LzoResult<Option<usize>> {
        let d = self.peek_le16()?;
        if version > 0 && d & 0xfffc == 0xfffc && t & 0xf8 == 0x18 {
            let n = ((t & 7) | self.peek(2)? << 3) + LZO_MIN_ZERO_RUN;
            self.room_for(n)?;
            self.out.resize(self.out.len() + n, 0);
            self.ip += 3;
            return Ok(Some(d & 3));
        }
        let mut n = (t & 7) + 2;
        if n == 2 {
            n = self.long_len(7)? + 2;
        }
        let d = self.le16()?;
        let dist = ((t & 8) << 11) + (d >> 2);
        if dist == 0 {
            return if n == 3 && self.ip == self.src.len() {
                Ok(None)
            } else {
                Err("bad end of stream")
            };
        }
        self.copy_match(dist + 0x4000, n)?;
        Ok(Some(d & 3))
    }
}

/// LZO1X decoder for both bitstream versions (tests and round trips; the model never decodes).
pub fn lzo1x_decompress(src: &[u8], max_out: usize) -> Result<Vec<u8>, &'static str> {
    if src.len() < 3 {
        return Err("input overrun");
    }
    let mut r = LzoReader {
        src,
        ip: 0,
        out: Vec::with_capacity(max_out),
        max_out,
    };
    let mut version = 0;
    if src.len() >= 5 && src[0] == 17 {
        version = src[1] as usize;
        r.ip = 2;
    }
    // The literals that ran last: 0 none, 1-3 a few (after a match), 4 a run.
    let mut state = 0;
    if r.peek(0)? > 17 {
        let t = r.next()? - 17;
        r.literals(t)?;
        state = t.min(4);
    }
    loop {
        let t = r.next()?;
        let next = match t {
            0..=15 if state == 0 => {
                let n = if t == 0 { r.long_len(15)? } else { t } + 3;
                r.literals(n)?;
                state = 4;
                continue;
            }
            0..=15 => r.m1(t, state)?,
            16..=31 => match r.m4(t, version)? {
                Some(next) => next,
                None => return Ok(r.out),
            },
            32..=63 => r.m3(t)?,
            _ => r.m2(t)?,
        };
        state = next;
        r.literals(next)?;
    }
}

// ---------------------------------------------------------------------------------------------
// Size samples.

/// Pages compressed per (codec, class). The slowest sample (deflate of usemem pages) takes
/// ~21 ms once per process; every sample's mean is within 0.3% of a 1024-page sample's
/// (tests/it/compressor.rs `sample_mean_converges`).
pub const SAMPLE_PAGES: usize = 128;

/// Compressed lengths of a deterministic sample of pages of one class under one codec.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizeSample {
    pub codec: Codec,
    pub class: ContentClass,
    /// Page keys the sample compressed, in draw order.
    pub page_keys: Vec<u64>,
    /// The codec's output length for each sampled page (may exceed a page: incompressible).
    pub lens: Vec<u32>,
}

impl SizeSample {
    /// Compress `n` pages of `class` (at least one). Usemem, random and text keys are spread
    /// over a 64 GiB mapping so the high bytes of usemem's word indices vary as at full scale;
    /// process-sample keys walk the shipped file's pages.
    pub fn compute(codec: Codec, class: ContentClass, n: usize) -> SizeSample {
        let n = n.max(1);
        let mut page = vec![0u8; PAGE_BYTES];
        let mut page_keys = Vec::with_capacity(n);
        let mut lens = Vec::with_capacity(n);
        for j in 0..n as u64 {
            let key = match class {
                ContentClass::ProcessSample => j,
                _ => mix64(j ^ 0xc0de_c0de) >> 40,
            };
            class.fill_page(key, &mut page);
            page_keys.push(key);
            lens.push(codec.compress_len(&page).min(u32::MAX as usize) as u32);
        }
        SizeSample {
            codec,
            class,
            page_keys,
            lens,
        }
    }

    /// The compressed length of page `page_key`: a sampled page chosen by a hash of the key,
    /// the same for the same key in every run.
    pub fn compressed_len(&self, page_key: u64) -> u32 {
        let i = (mix64(page_key ^ 0x5eed_5a31) % self.lens.len() as u64) as usize;
        self.lens[i]
    }

    /// Bytes a zram or zswap store keeps for the page: the compressed length, or a whole page
    /// when compression did not shrink it (both store such a page uncompressed).
    pub fn stored_len(&self, page_key: u64) -> u32 {
        let len = self.compressed_len(page_key);
        if len as usize >= PAGE_BYTES {
            PAGE_BYTES as u32
        } else {
            len
        }
    }

    /// The codec output does not fit in less than a page.
    pub fn incompressible(&self, page_key: u64) -> bool {
        self.compressed_len(page_key) as usize >= PAGE_BYTES
    }

    /// Mean codec output length over the sample, bytes.
    pub fn mean_len(&self) -> f64 {
        self.lens.iter().map(|&l| l as f64).sum::<f64>() / self.lens.len() as f64
    }

    /// Mean stored length (incompressible pages count as a whole page), bytes.
    pub fn mean_stored_len(&self) -> f64 {
        self.lens
            .iter()
            .map(|&l| (l as usize).min(PAGE_BYTES) as f64)
            .sum::<f64>()
            / self.lens.len() as f64
    }

    /// PAGE_SIZE over the mean stored length: what zram's orig/compr data sizes give.
    pub fn ratio(&self) -> f64 {
        PAGE_BYTES as f64 / self.mean_stored_len()
    }
}

/// The memoised sample for (codec, class): computed once per process, shared by all threads.
pub fn size_sample(codec: Codec, class: ContentClass) -> &'static SizeSample {
    type Memo = Mutex<BTreeMap<(Codec, ContentClass), &'static SizeSample>>;
    static MEMO: OnceLock<Memo> = OnceLock::new();
    let memo = MEMO.get_or_init(|| Mutex::new(BTreeMap::new()));
    // A poisoned lock only means another thread panicked mid-insert; the map is still valid.
    let mut map = memo.lock().unwrap_or_else(|e| e.into_inner());
    map.entry((codec, class))
        .or_insert_with(|| Box::leak(Box::new(SizeSample::compute(codec, class, SAMPLE_PAGES))))
}

// ---------------------------------------------------------------------------------------------
// CPU cost.

/// Codec CPU time for one page of `class`, in percent of its time for a usemem page:
/// (compress, decompress), indexed like [`ContentClass::ALL`]. measured offline with the crates
/// on the development VM (benches/codec_ns.rs, min of 7 rounds over each class's 128-page
/// sample; docs/compression.md), never read from a clock at simulation time. Compression uses
/// each codec's own encoder (lz4: C liblz4, the kernel's algorithm). Decompression of lzo and
/// lzo-rle uses liblz4's decoder shape (our LZO decoder is a plain test decoder without the
/// kernel's wide copies), except lzo-rle's zero runs, which decode as a memset (3%).
const CLASS_COST_PCT: [[(u64, u64); 6]; 6] = [
    // usemem, zero, same-filled, random, text, process-sample
    [(100, 100), (19, 3), (37, 8), (11, 3), (220, 42), (84, 23)], // lzo-rle
    [(100, 100), (37, 8), (37, 8), (11, 3), (220, 42), (101, 23)], // lzo
    [(100, 100), (10, 8), (10, 8), (22, 3), (275, 42), (58, 23)], // lz4
    [(100, 100), (1, 8), (1, 7), (11, 3), (28, 38), (37, 17)],    // lz4hc
    [(100, 100), (10, 6), (10, 5), (34, 1), (222, 126), (144, 66)], // zstd
    [(100, 100), (4, 25), (5, 42), (21, 1), (35, 204), (27, 187)], // deflate
];

/// Codec costs by content class: a trait, as `CostModel` is the engine's (a floor below,
/// which knows no codec or content class).
pub trait CodecCost {
    fn codec_ns(&self, codec: Codec, class: ContentClass) -> (u64, u64);
}

impl CodecCost for CostModel {
    /// CPU ns to (compress, decompress) one 4 KiB page of `class` with `codec`: the usemem
    /// figure of the cost model (engine/cost.rs, measured on this machine's zram or scaled from
    /// the crate) times the class's measured factor. `deflate-iaa` runs on the accelerator:
    /// its CPU side (descriptor submission, polling) belongs to the accelerator model, so 0 here.
    fn codec_ns(&self, codec: Codec, class: ContentClass) -> (u64, u64) {
        let (row, c, d) = match codec {
            Codec::LzoRle => (0, self.lzo_rle_compress_ns, self.lzo_rle_decompress_ns),
            Codec::Lzo => (1, self.lzo_compress_ns, self.lzo_decompress_ns),
            Codec::Lz4 => (2, self.lz4_compress_ns, self.lz4_decompress_ns),
            Codec::Lz4hc => (3, self.lz4hc_compress_ns, self.lz4hc_decompress_ns),
            Codec::Zstd => (4, self.zstd_compress_ns, self.zstd_decompress_ns),
            Codec::Deflate => (5, self.deflate_compress_ns, self.deflate_decompress_ns),
            Codec::DeflateIaa => return (0, 0),
        };
        let col = class.index() as usize;
        let (fc, fd) = CLASS_COST_PCT[row][col];
        (c * fc / 100, d * fd / 100)
    }
}
