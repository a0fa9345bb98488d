//! Small synthetic stores to try the tools on (`zrecord demo`, the viewer,
//! tests): every geometry and codec, deterministic, a few megabytes in all.

use crate::format::Codec;
use crate::local::writer::{CreateOptions, Writer};
use crate::training::dict::{train_dense, Tier};
use crate::training::sampler::Sfc64;
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
/// and a dataset, `dataset/`: four aligned streams of 256 records (record
/// `i` of each describes image `i`), which the viewer opens as one table,
/// plus `dataset/tokenizer.json` (see [`write_demo_dataset`]).
///
/// The content depends on nothing but this code, so tests can rely on it.
///
/// # Errors
/// `AlreadyExists` when one of the stores is already there; `Io`.
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let stores = zrecord::serve::demo::write_demo_stores(dir.path())?;
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

    made.extend(write_demo_dataset(&dir.join("dataset"), &images, &labels)?);
    Ok(made)
}

/// Words of the demo captions: one class name per label (the waves get
/// finer as the label grows), and a few tints and views.
const CLASSES: [&str; 10] = [
    "broad swells",
    "long rollers",
    "gentle waves",
    "soft ripples",
    "rippled bands",
    "close stripes",
    "fine stripes",
    "tight ridges",
    "dense grain",
    "fine grain",
];
const TINTS: [&str; 6] = ["warm", "cool", "pale", "deep", "muted", "bright"];
const VIEWS: [&str; 5] =
    ["seen at a slant", "almost level", "running steeply", "crossing the frame", "drifting sideways"];

/// Write the demo dataset into `dir`: aligned streams of `labels.len()`
/// records each, and a tokenizer for the token stream.
///
/// | stream | geometry | dtype | codec |
/// |--------|----------|-------|-------|
/// | `image` | Dense `(3, 32, 32)`: `images` | `\|u1` | zstd |
/// | `label` | Dense scalar: `labels` | `<i8` | raw |
/// | `caption` | Ragged 1-D UTF-8 text describing the image | `\|u1` | zstd |
/// | `caption-tokens` | Ragged 1-D: the caption as token ids, then `<\|endoftext\|>` | `<i4` | zstd |
///
/// `tokenizer.json` is a Hugging Face tokenizer file with a byte-level BPE
/// vocabulary: ids 0..256 are the 256 bytes (in GPT-2's byte-to-unicode
/// spelling), then every caption word with and without a leading space
/// (`Ġwaves`, `waves`), then the special `<|endoftext|>`. Captions are
/// tokenized greedily by whole words, other bytes one by one, so the ids
/// decode back to the caption exactly.
///
/// # Errors
/// `AlreadyExists` when a stream is already there; `Io`.
pub fn write_demo_dataset(dir: &Path, images: &[u8], labels: &[i64]) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "create directory", e))?;
    let n = labels.len();
    let row = images.len().checked_div(n).unwrap_or(0);
    let mut made = Vec::new();

    let path = dir.join("image");
    let mut w = Writer::create_dense(
        &path,
        "|u1",
        &[3, SIDE as u64, SIDE as u64],
        CreateOptions::codec(Codec::Zstd),
    )?;
    w.append(&images[..row * n])?;
    w.close()?;
    made.push(path);

    let path = dir.join("label");
    let mut w = Writer::create_dense(&path, "<i8", &[], CreateOptions::codec(Codec::Raw))?;
    w.append_typed(labels)?;
    w.close()?;
    made.push(path);

    // Its own generator, so the stores above stay as they were.
    let mut rng = Sfc64::new(2002);
    let captions: Vec<String> = labels
        .iter()
        .map(|&label| {
            let tint = TINTS[rng.below(TINTS.len() as u64) as usize];
            let view = VIEWS[rng.below(VIEWS.len() as u64) as usize];
            format!("{} in a {tint} tint, {view}", CLASSES[label as usize % CLASSES.len()])
        })
        .collect();
    let path = dir.join("caption");
    let mut w = Writer::create_ragged(&path, "|u1", CreateOptions::codec(Codec::Zstd))?;
    for c in &captions {
        w.append_ragged(&[(&[c.len() as u64], c.as_bytes())])?;
    }
    w.close()?;
    made.push(path);

    let vocab = DemoVocab::new();
    let path = dir.join("caption-tokens");
    let mut w = Writer::create_ragged(&path, "<i4", CreateOptions::codec(Codec::Zstd))?;
    for c in &captions {
        let mut ids = vocab.encode(c);
        ids.push(vocab.end_of_text);
        let bytes: Vec<u8> = ids.iter().flat_map(|id| id.to_le_bytes()).collect();
        w.append_ragged(&[(&[ids.len() as u64], &bytes)])?;
    }
    w.close()?;
    made.push(path);

    let file = dir.join("tokenizer.json");
    std::fs::write(&file, vocab.tokenizer_json()).map_err(|e| Error::io(&file, "write", e))?;
    Ok(made)
}

/// GPT-2's `bytes_to_unicode`: the printable character standing for each byte.
fn byte_to_char() -> [char; 256] {
    let mut out = ['\0'; 256];
    let mut next = 256u32;
    for b in 0..=255u8 {
        let printable = (33..=126).contains(&b) || (161..=172).contains(&b) || b >= 174;
        out[b as usize] = if printable {
            char::from(b)
        } else {
            next += 1;
            char::from_u32(next - 1).expect("a valid code point")
        };
    }
    out
}

/// The demo tokenizer's vocabulary: bytes, caption words, `<|endoftext|>`.
struct DemoVocab {
    /// `(token string, id)` in id order.
    tokens: Vec<(String, i32)>,
    words: std::collections::HashMap<String, i32>,
    end_of_text: i32,
}

impl DemoVocab {
    fn new() -> Self {
        let chars = byte_to_char();
        let mut tokens: Vec<(String, i32)> = (0..256).map(|b| (chars[b].to_string(), b as i32)).collect();
        let mut words = std::collections::HashMap::new();
        let mut all: Vec<&str> =
            CLASSES.iter().chain(&TINTS).chain(&VIEWS).flat_map(|p| p.split(' ')).collect();
        all.extend(["in", "a", "tint"]);
        all.sort_unstable();
        all.dedup();
        for word in all {
            for spelled in [word.to_string(), format!(" {word}")] {
                let id = tokens.len() as i32;
                let token: String = spelled.bytes().map(|b| chars[b as usize]).collect();
                tokens.push((token, id));
                words.insert(spelled, id);
            }
        }
        let end_of_text = tokens.len() as i32;
        DemoVocab { tokens, words, end_of_text }
    }

    /// Whole words (with their leading space) where the vocabulary has them, else bytes.
    fn encode(&self, text: &str) -> Vec<i32> {
        let mut ids = Vec::new();
        let bytes = text.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            let start = at;
            let mut end = at + usize::from(bytes[at] == b' ');
            while end < bytes.len() && bytes[end].is_ascii_alphabetic() {
                end += 1;
            }
            match self.words.get(&text[start..end]) {
                Some(&id) if end > start => {
                    ids.push(id);
                    at = end;
                }
                _ => {
                    ids.push(i32::from(bytes[at]));
                    at += 1;
                }
            }
        }
        ids
    }

    fn tokenizer_json(&self) -> String {
        let vocab: serde_json::Map<String, serde_json::Value> =
            self.tokens.iter().map(|(t, id)| (t.clone(), serde_json::Value::from(*id))).collect();
        let json = serde_json::json!({
            "version": "1.0",
            "added_tokens": [{
                "id": self.end_of_text, "content": "<|endoftext|>", "single_word": false,
                "lstrip": false, "rstrip": false, "normalized": false, "special": true
            }],
            "normalizer": null,
            "pre_tokenizer": { "type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true },
            "post_processor": null,
            "decoder": { "type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true },
            "model": { "type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": "",
                       "end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false,
                       "vocab": vocab, "merges": [] }
        });
        serde_json::to_string_pretty(&json).expect("JSON of plain values")
    }
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
