//! Write a large Ragged token store for the viewer's scrolling test:
//! `N` records of `<i4` token ids, 8 to 71 tokens each, zstd.
//!
//! ```text
//! cargo run --example big_store -- DIR N
//! ```
//! Record `i` holds `len = 8 + (i % 64)` tokens, token `j` being
//! `(i * 31 + j * 7) % 50_000`, so a test can recompute any record.

use zrecord::local::writer::{CreateOptions, Writer};
use zrecord::Codec;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().ok_or("usage: big_store DIR N")?;
    let n: u64 = args.next().ok_or("usage: big_store DIR N")?.parse()?;
    let mut w = Writer::create_ragged(&dir, "<i4", CreateOptions::codec(Codec::Zstd))?;
    let chunk = 10_000;
    let mut start = 0;
    while start < n {
        let end = (start + chunk).min(n);
        let records: Vec<(Vec<u64>, Vec<u8>)> = (start..end)
            .map(|i| {
                let len = 8 + i % 64;
                let bytes =
                    (0..len).flat_map(|j| (((i * 31 + j * 7) % 50_000) as i32).to_le_bytes()).collect();
                (vec![len], bytes)
            })
            .collect();
        let refs: Vec<_> = records.iter().map(|(s, b)| (s.as_slice(), b.as_slice())).collect();
        w.append_ragged(&refs)?;
        start = end;
    }
    w.close()?;
    println!("{dir}: {n} records");
    Ok(())
}
