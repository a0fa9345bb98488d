//! Small synthetic stores to try the tools on (`zrecord demo`, the viewer,
//! tests): every geometry and codec, deterministic, a few megabytes in all.

use crate::format::Codec;
use crate::sampler::Sfc64;
use crate::train::{train_dense, Tier};
use crate::writer::{CreateOptions, Writer};
use crate::{Error, Result};
use std::path::{Path, PathBuf};

/// Images per Dense image store.
const IMAGES: usize = 256;
/// Side of the Dense images.
const SIDE: usize = 32;

/// Write the demo stores into `dir` (created if missing) and return their
/// paths, in this order:
///
/// | store | geometry | dtype | codec |
/// |-------|----------|-------|-------|
/// | `images-raw` | Dense `(3, 32, 32)`, 256 smooth synthetic images | `\|u1` | raw |
/// | `images-zstd` | the same images | `\|u1` | zstd |
/// | `images-zstd_dict` | the same images | `\|u1` | zstd_dict (fast tier) |
/// | `ragged-images-zstd` | Ragged `(3, H, W)`, H and W in 16..=48 | `\|u1` | zstd |
/// | `tokens-zstd` | Ragged 1-D token sequences, 8..=256 long | `<i4` | zstd |
/// | `labels-raw` | Dense scalar labels 0..10, one per image | `<i8` | raw |
///
/// The content depends on nothing but this code, so tests can rely on it.
///
/// # Errors
/// `AlreadyExists` when one of the stores is already there; `Io`.
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let stores = zrecord::demo::write_demo_stores(dir.path())?;
/// use zrecord::Records;
/// let images = zrecord::Store::open(&stores[0])?;
/// assert_eq!(images.item_shape(), Some(&[3u64, 32, 32][..]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_demo_stores(dir: impl AsRef<Path>) -> Result<Vec<PathBuf>> {
    let dir = dir.as_ref();
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create directory", e))?;
    let mut rng = Sfc64::new(2001);
    let mut made = Vec::new();

    let row = 3 * SIDE * SIDE;
    let mut images = Vec::with_capacity(IMAGES * row);
    let mut labels = Vec::with_capacity(IMAGES);
    for _ in 0..IMAGES {
        let label = rng.below(10);
        images.extend(smooth_image(&mut rng, SIDE, SIDE, label));
        labels.push(label as i64);
    }
    let dict = train_dense(&images, row, Tier::Fast)?;
    for (name, options) in [
        ("images-raw", CreateOptions::codec(Codec::Raw)),
        ("images-zstd", CreateOptions::codec(Codec::Zstd)),
        ("images-zstd_dict", CreateOptions::with_dict(dict)),
    ] {
        let path = dir.join(name);
        let mut w = Writer::create_dense(&path, "|u1", &[3, SIDE as u64, SIDE as u64], options)?;
        w.append(&images)?;
        w.close()?;
        made.push(path);
    }

    let path = dir.join("ragged-images-zstd");
    let mut w = Writer::create_ragged(&path, "|u1", CreateOptions::codec(Codec::Zstd))?;
    for _ in 0..96 {
        let (h, wd) = (16 + rng.below(33) as usize, 16 + rng.below(33) as usize);
        let label = rng.below(10);
        let pixels = smooth_image(&mut rng, h, wd, label);
        w.append_ragged(&[(&[3, h as u64, wd as u64], &pixels)])?;
    }
    w.close()?;
    made.push(path);

    let path = dir.join("tokens-zstd");
    let mut w = Writer::create_ragged(&path, "<i4", CreateOptions::codec(Codec::Zstd))?;
    for _ in 0..512 {
        let len = 8 + rng.below(249) as usize;
        // Zipf-like: small token ids are far more common, as in real text.
        let tokens: Vec<u8> = (0..len)
            .flat_map(|_| {
                let u = unit(&mut rng);
                ((u * u * u * 32_000.0) as i32).to_le_bytes()
            })
            .collect();
        w.append_ragged(&[(&[len as u64], &tokens)])?;
    }
    w.close()?;
    made.push(path);

    let path = dir.join("labels-raw");
    let mut w = Writer::create_dense(&path, "<i8", &[], CreateOptions::codec(Codec::Raw))?;
    w.append_typed(&labels)?;
    w.close()?;
    made.push(path);
    Ok(made)
}

/// A uniform float in `[0, 1)`.
fn unit(rng: &mut Sfc64) -> f32 {
    (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32
}

/// A `(3, h, w)` image of soft colour waves whose frequency follows `label`.
fn smooth_image(rng: &mut Sfc64, h: usize, w: usize, label: u64) -> Vec<u8> {
    let freq = 0.05 + 0.03 * label as f32;
    let angle = unit(rng) * std::f32::consts::TAU;
    let (fx, fy) = (freq * angle.cos(), freq * angle.sin());
    let mut out = Vec::with_capacity(3 * h * w);
    for c in 0..3 {
        let phase = unit(rng) * std::f32::consts::TAU + c as f32;
        let gain = 60.0 + 60.0 * unit(rng);
        for y in 0..h {
            for x in 0..w {
                let v = 128.0 + gain * (fx * x as f32 + fy * y as f32 + phase).sin();
                out.push(v.clamp(0.0, 255.0) as u8);
            }
        }
    }
    out
}
