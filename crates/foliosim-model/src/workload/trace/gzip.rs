//! gzip (RFC 1952) around miniz_oxide's raw deflate: traces are stored gzipped.

/// CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320), as gzip's trailer holds it.
fn crc32(data: &[u8]) -> u32 {
    let table: Vec<u32> = (0..256u32)
        .map(|mut c| {
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            c
        })
        .collect();
    !data.iter().fold(!0u32, |c, &b| {
        table[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8)
    })
}

/// A gzip member: fixed header (no name, mtime 0: the same bytes for the same text).
pub fn compress(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    out.extend(miniz_oxide::deflate::compress_to_vec(data, 9));
    out.extend(crc32(data).to_le_bytes());
    out.extend((data.len() as u32).to_le_bytes());
    out
}

/// The data of a gzip member; on failure, what could be decompressed and why it stopped.
pub fn decompress(bytes: &[u8]) -> Result<Vec<u8>, (Vec<u8>, String)> {
    let fail = |why: &str| Err((Vec::new(), why.to_string()));
    if bytes.len() < 18 || bytes[0] != 0x1f || bytes[1] != 0x8b {
        return fail("not a complete gzip header");
    }
    if bytes[2] != 8 {
        return fail("gzip compression method is not deflate");
    }
    let flags = bytes[3];
    let mut at = 10;
    if flags & 4 != 0 {
        // FEXTRA
        let len = u16::from_le_bytes([bytes[at], bytes[at + 1]]) as usize;
        at += 2 + len;
    }
    for bit in [8u8, 16] {
        // FNAME, FCOMMENT: zero-terminated.
        if flags & bit != 0 {
            match bytes.get(at..).and_then(|b| b.iter().position(|&c| c == 0)) {
                Some(end) => at += end + 1,
                None => return fail("gzip header truncated"),
            }
        }
    }
    if flags & 2 != 0 {
        at += 2; // FHCRC
    }
    let Some(body) = bytes.get(at..) else {
        return fail("gzip header truncated");
    };
    let (data, used) = inflate(body)?;
    let Some(trailer) = body.get(used..used + 8) else {
        return Err((data, "the gzip trailer is missing".into()));
    };
    let crc = u32::from_le_bytes(trailer[0..4].try_into().unwrap());
    let len = u32::from_le_bytes(trailer[4..8].try_into().unwrap());
    if crc != crc32(&data) || len != data.len() as u32 {
        return Err((
            data,
            "the gzip checksum does not match: the file is corrupt".into(),
        ));
    }
    Ok(data)
}

/// Inflate a raw deflate stream; returns the data and the input bytes it used.
fn inflate(input: &[u8]) -> Result<(Vec<u8>, usize), (Vec<u8>, String)> {
    use miniz_oxide::inflate::core::{decompress, inflate_flags, DecompressorOxide};
    use miniz_oxide::inflate::TINFLStatus;
    let mut state = Box::<DecompressorOxide>::default();
    let mut out = vec![0u8; (input.len() * 4).max(1 << 16)];
    let (mut in_at, mut out_at) = (0, 0);
    loop {
        let flags = inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF
            | if in_at < input.len() {
                inflate_flags::TINFL_FLAG_HAS_MORE_INPUT
            } else {
                0
            };
        let (status, used_in, used_out) =
            decompress(&mut state, &input[in_at..], &mut out, out_at, flags);
        in_at += used_in;
        out_at += used_out;
        match status {
            TINFLStatus::Done => {
                out.truncate(out_at);
                return Ok((out, in_at));
            }
            TINFLStatus::HasMoreOutput => out.resize(out.len() * 2, 0),
            TINFLStatus::NeedsMoreInput | TINFLStatus::FailedCannotMakeProgress => {
                out.truncate(out_at);
                return Err((out, "unexpected end of the compressed data".into()));
            }
            other => {
                out.truncate(out_at);
                return Err((out, format!("corrupt compressed data ({other:?})")));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_reports_truncation() {
        let text: Vec<u8> = (0..200_000u32)
            .flat_map(|i| format!("{i} line\n").into_bytes())
            .collect();
        let gz = compress(&text);
        assert!(gz.len() < text.len() / 3);
        assert_eq!(decompress(&gz).unwrap(), text);
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        let (partial, why) = decompress(&gz[..gz.len() / 2]).unwrap_err();
        assert!(!partial.is_empty() && partial.len() < text.len(), "{why}");
        assert!(text.starts_with(&partial));
    }
}
