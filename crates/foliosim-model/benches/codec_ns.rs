//! CPU time of the codecs through their crates on this machine, per 4 KiB page and content
//! class: the source of the per-class factors and of the crate side of the kernel/crate scale
//! in hw/compressor.rs (docs/compression.md).
//!
//!   cargo bench -p foliosim --bench codec_ns
//!
//! Each figure is the minimum over rounds of the mean over the class's 128-page sample, so a
//! busy neighbour on a shared core inflates it as little as possible. `lz4-c` is the reference
//! C liblz4 in fast mode (acceleration 1), the same algorithm as the kernel's lib/lz4: its
//! ratio to the kernel's lz4 measured through zram is the scale for codecs the kernel lacks.

use std::hint::black_box;
use std::time::Instant;

use foliosim_model::content::{ContentClass, PAGE_BYTES};
use foliosim_model::hw::compressor::{size_sample, Codec};

const ROUNDS: usize = 7;
const REPS: usize = 20;

fn pages(class: ContentClass) -> Vec<Vec<u8>> {
    size_sample(Codec::Lz4, class)
        .page_keys
        .iter()
        .map(|&k| {
            let mut p = vec![0u8; PAGE_BYTES];
            class.fill_page(k, &mut p);
            p
        })
        .collect()
}

fn min_mean_ns(pages: usize, mut f: impl FnMut()) -> f64 {
    (0..ROUNDS)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..REPS {
                f();
            }
            t.elapsed().as_nanos() as f64 / (REPS * pages) as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    println!(
        "{:15} {:12} {:>12} {:>12}",
        "class", "codec", "comp_ns/pg", "decomp_ns/pg"
    );
    for class in ContentClass::ALL {
        let ps = pages(class);
        let n = ps.len();
        for codec in Codec::ALL {
            let comp: Vec<Vec<u8>> = ps.iter().map(|p| codec.compress(p)).collect();
            let (c, d) = match codec {
                // The kernel keeps one zstd context per CPU; so does this loop.
                Codec::Zstd => zstd_ns(&ps, &comp),
                // Likewise one deflate stream per CPU, reset per page.
                Codec::Deflate | Codec::DeflateIaa => deflate_ns(codec, &ps, &comp),
                _ => (
                    min_mean_ns(n, || {
                        for p in &ps {
                            black_box(codec.compress(black_box(p)));
                        }
                    }),
                    min_mean_ns(n, || {
                        for z in &comp {
                            black_box(codec.decompress(black_box(z), PAGE_BYTES).ok());
                        }
                    }),
                ),
            };
            println!(
                "{:15} {:12} {:12.0} {:12.0}",
                class.name(),
                codec.name(),
                c,
                d
            );
        }
        let comp: Vec<Vec<u8>> = ps
            .iter()
            .map(|p| lz4::block::compress(p, None, false).unwrap_or_default())
            .collect();
        let c = min_mean_ns(n, || {
            for p in &ps {
                black_box(lz4::block::compress(black_box(p), None, false).ok());
            }
        });
        let d = min_mean_ns(n, || {
            for z in &comp {
                black_box(lz4::block::decompress(black_box(z), Some(PAGE_BYTES as i32)).ok());
            }
        });
        println!("{:15} {:12} {:12.0} {:12.0}", class.name(), "lz4-c", c, d);
    }
}

fn zstd_ns(ps: &[Vec<u8>], comp: &[Vec<u8>]) -> (f64, f64) {
    let (Ok(mut cc), Ok(mut dc)) = (
        zstd::bulk::Compressor::new(3),
        zstd::bulk::Decompressor::new(),
    ) else {
        return (f64::NAN, f64::NAN);
    };
    let mut out = vec![0u8; 2 * PAGE_BYTES];
    let c = min_mean_ns(ps.len(), || {
        for p in ps {
            black_box(cc.compress_to_buffer(black_box(p), &mut out).ok());
        }
    });
    let d = min_mean_ns(comp.len(), || {
        for z in comp {
            black_box(dc.decompress_to_buffer(black_box(z), &mut out).ok());
        }
    });
    (c, d)
}

fn deflate_ns(codec: Codec, ps: &[Vec<u8>], comp: &[Vec<u8>]) -> (f64, f64) {
    use miniz_oxide::deflate::core::{
        compress, create_comp_flags_from_zip_params, CompressorOxide, TDEFLFlush,
    };
    use miniz_oxide::inflate::core::{decompress, inflate_flags, DecompressorOxide};
    let strategy = if codec == Codec::DeflateIaa { 4 } else { 0 };
    let mut d = CompressorOxide::new(create_comp_flags_from_zip_params(6, 0, strategy));
    let mut out = vec![0u8; 2 * PAGE_BYTES];
    let c = min_mean_ns(ps.len(), || {
        for p in ps {
            d.reset();
            black_box(compress(&mut d, black_box(p), &mut out, TDEFLFlush::Finish));
        }
    });
    let mut inf = DecompressorOxide::new();
    let mut page = vec![0u8; PAGE_BYTES];
    let dn = min_mean_ns(comp.len(), || {
        for z in comp {
            inf.init();
            black_box(decompress(
                &mut inf,
                black_box(z),
                &mut page,
                0,
                inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF,
            ));
        }
    });
    (c, dn)
}
