//! STUB until branch `codec` lands.
use crate::content::ContentClass;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Codec {
    LzoRle,
    Lzo,
    Lz4,
    Lz4hc,
    Zstd,
    Deflate,
    DeflateIaa,
}

impl Codec {
    pub const ALL: &'static [Codec] = &[
        Codec::LzoRle,
        Codec::Lzo,
        Codec::Lz4,
        Codec::Lz4hc,
        Codec::Zstd,
        Codec::Deflate,
        Codec::DeflateIaa,
    ];
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
    pub fn from_name(name: &str) -> Option<Codec> {
        Self::ALL.iter().copied().find(|c| c.name() == name)
    }
}

pub struct SizeSample {
    len: u32,
}

impl SizeSample {
    pub fn compressed_len(&self, _page_key: u64) -> u32 {
        self.len
    }
    pub fn mean_len(&self) -> f64 {
        self.len as f64
    }
}

pub fn size_sample(_codec: Codec, class: ContentClass) -> &'static SizeSample {
    static HALF: SizeSample = SizeSample { len: 2000 };
    static TINY: SizeSample = SizeSample { len: 20 };
    static FULL: SizeSample = SizeSample { len: 4096 };
    match class {
        ContentClass::Zero | ContentClass::SameFilled => &TINY,
        ContentClass::Random => &FULL,
        _ => &HALF,
    }
}

/// CPU ns to (compress, decompress) one 4 KiB page of `class` with `codec`. STUB.
pub fn codec_ns(
    cost: &crate::engine::cost::CostModel,
    codec: Codec,
    class: ContentClass,
) -> (u64, u64) {
    let _ = (cost, class);
    match codec {
        Codec::DeflateIaa => (0, 0),
        Codec::Deflate => (20000, 5000),
        _ => (3000, 1000),
    }
}
