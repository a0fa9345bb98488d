//! The dataset manifest: one JSON document that says everything a reader
//! needs (columns, shards in order, lengths, file sizes, version), read with
//! one request and no listing. Parsing validates every rule before anything
//! is sized from it; see `docs/FORMAT.md`, "Datasets".

use super::layout;
use crate::format::{Codec, DType, FileSizes, Geometry, Schema, StoreInfo};
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What the `format` field of every manifest says.
pub const FORMAT: &str = "zrecord-dataset";
/// The manifest layout this crate writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// Largest manifest a reader accepts (about 2 million shards of 4 columns).
pub const MAX_MANIFEST_BYTES: u64 = 1 << 30;
/// Most columns a dataset may have.
pub const MAX_COLUMNS: usize = 1024;

/// A committed version of a dataset.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Always [`FORMAT`].
    pub format: String,
    /// The manifest layout, [`FORMAT_VERSION`].
    pub format_version: u32,
    /// This version's number: 1 for the first commit, one more per commit.
    pub version: u64,
    /// Records in the dataset: the sum of the shards' lengths.
    pub length: u64,
    /// The columns, in order.
    pub columns: Vec<ColumnSpec>,
    /// The shards, in order: record `i` of the dataset is record `i - start`
    /// of the shard whose records start at `start`.
    pub shards: Vec<ShardEntry>,
}

/// One column: the schema and codec every shard's store of it has.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnSpec {
    /// The column's name, also its store's directory name in each shard.
    pub name: String,
    /// `dense` or `ragged`.
    pub kind: ColumnKind,
    /// NumPy dtype string, as the stores' schema has it.
    pub dtype: String,
    /// A Dense column's `item_shape` (absent for Ragged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_shape: Option<Vec<u64>>,
    /// `raw`, `zstd` or `zstd_dict`.
    pub codec: String,
    /// The dictionary every shard of the column shares, when it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dict: Option<DictDigest>,
    /// The Arrow type the column was written from, one of [`ARROW_TYPES`],
    /// so readers give it back (text, not bytes, for `string`); absent for
    /// columns written from NumPy. Stores do not carry it (loaderx's schema
    /// has no room), so it lives here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrow: Option<String>,
}

/// The values of a column's `arrow` attribute, each with the geometry it
/// needs: text and bytes are Ragged `|u1`, lists Ragged, fixed-size ones Dense.
pub const ARROW_TYPES: [(&str, &str); 8] = [
    ("string", "ragged |u1"),
    ("large_string", "ragged |u1"),
    ("binary", "ragged |u1"),
    ("large_binary", "ragged |u1"),
    ("list", "ragged"),
    ("large_list", "ragged"),
    ("fixed_size_list", "dense"),
    ("fixed_shape_tensor", "dense"),
];

/// Dense or Ragged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ColumnKind {
    /// Every record one `item_shape`.
    Dense,
    /// Each record its own shape.
    Ragged,
}

/// A dictionary's size and XXH3-64 of its bytes (16 hex digits).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DictDigest {
    /// Bytes of `dict.zr`.
    pub size: u64,
    /// XXH3-64 (seed 0) of `dict.zr`, 16 lowercase hex digits.
    pub xxh3: String,
}

/// One shard: a directory holding one store per column, all of one length.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardEntry {
    /// The shard's directory, relative to the dataset (`shards/<name>`).
    pub path: String,
    /// Records in the shard (every column's store has this many).
    pub length: u64,
    /// Each column's store files.
    pub columns: BTreeMap<String, ShardFiles>,
}

/// The sizes of one (shard, column) store's files, as committed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardFiles {
    /// Bytes of `meta.zr`.
    pub meta: u64,
    /// Bytes of `data.zr`.
    pub data: u64,
    /// Bytes of `dict.zr`, when the store has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dict: Option<u64>,
    /// Bytes of `sums.zr`: present when the store is sealed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sums: Option<u64>,
}

impl ShardFiles {
    /// The sizes a store's [`StoreInfo`] reports (no sidecar).
    pub fn sizes(&self) -> FileSizes {
        FileSizes { meta: self.meta, data: self.data, dict: self.dict }
    }
}

impl ColumnSpec {
    /// The column as a store describes it: `name` and the store's own info.
    pub fn of_store(name: &str, info: &StoreInfo, dict: Option<&[u8]>) -> ColumnSpec {
        let (kind, item_shape) = match info.geometry() {
            Geometry::Dense { item_shape } => (ColumnKind::Dense, Some(item_shape.clone())),
            Geometry::Ragged => (ColumnKind::Ragged, None),
        };
        ColumnSpec {
            name: name.to_string(),
            kind,
            dtype: info.dtype().as_str().to_string(),
            item_shape,
            codec: info.codec().name().to_string(),
            dict: dict.map(DictDigest::of),
            arrow: None,
        }
    }

    /// Whether the column's `arrow` attribute is known and fits its geometry.
    ///
    /// # Errors
    /// A message naming the attribute and what it needs.
    pub fn check_arrow(&self) -> Result<(), String> {
        let Some(arrow) = &self.arrow else { return Ok(()) };
        let Some((_, needs)) = ARROW_TYPES.iter().find(|(name, _)| name == arrow) else {
            let known: Vec<&str> = ARROW_TYPES.iter().map(|(n, _)| *n).collect();
            return Err(format!("unknown arrow type {arrow:?} (one of {})", known.join(", ")));
        };
        let kind = format!("{:?}", self.kind).to_lowercase();
        let fits = match needs.split_once(' ') {
            Some((k, dtype)) => kind == k && self.dtype == dtype,
            None => kind == *needs,
        };
        if fits {
            Ok(())
        } else {
            Err(format!("arrow type {arrow:?} needs a {needs} column, not {kind} {}", self.dtype))
        }
    }

    /// The column's schema.
    ///
    /// # Errors
    /// A message for a dtype NumPy would not read.
    pub fn schema(&self) -> Result<Schema, String> {
        let dtype = DType::parse(&self.dtype)?;
        let geometry = match (self.kind, &self.item_shape) {
            (ColumnKind::Dense, Some(shape)) => Geometry::Dense { item_shape: shape.clone() },
            (ColumnKind::Ragged, None) => Geometry::Ragged,
            (ColumnKind::Dense, None) => return Err("a dense column needs an item_shape".into()),
            (ColumnKind::Ragged, Some(_)) => return Err("a ragged column has no item_shape".into()),
        };
        Ok(Schema { dtype, geometry })
    }

    /// The column's codec.
    ///
    /// # Errors
    /// A message naming an unknown codec.
    pub fn codec(&self) -> Result<Codec, String> {
        [Codec::Raw, Codec::Zstd, Codec::ZstdDict]
            .into_iter()
            .find(|c| c.name() == self.codec)
            .ok_or_else(|| format!("unknown codec {:?} (raw, zstd or zstd_dict)", self.codec))
    }

    /// How `other` (the same column, as another shard or committer has it)
    /// differs, if it does.
    pub fn mismatch(&self, other: &ColumnSpec) -> Option<String> {
        let field = |what: &str, ours: String, theirs: String| {
            (ours != theirs).then(|| format!("{what} is {theirs}, the dataset's is {ours}"))
        };
        field("kind", format!("{:?}", self.kind).to_lowercase(), format!("{:?}", other.kind).to_lowercase())
            .or_else(|| field("dtype", self.dtype.clone(), other.dtype.clone()))
            .or_else(|| {
                field("item_shape", format!("{:?}", self.item_shape), format!("{:?}", other.item_shape))
            })
            .or_else(|| field("codec", self.codec.clone(), other.codec.clone()))
    }
}

impl DictDigest {
    /// The digest of dictionary bytes.
    pub fn of(bytes: &[u8]) -> DictDigest {
        DictDigest { size: bytes.len() as u64, xxh3: hex16(xxh3::hash64_with_seed(bytes, 0)) }
    }

    /// Whether `bytes` are this dictionary.
    pub fn matches(&self, bytes: &[u8]) -> bool {
        *self == DictDigest::of(bytes)
    }
}

/// 16 lowercase hex digits.
fn hex16(v: u64) -> String {
    format!("{v:016x}")
}

impl Manifest {
    /// A manifest of `columns` and `shards` at `version` (its length summed).
    pub fn new(version: u64, columns: Vec<ColumnSpec>, shards: Vec<ShardEntry>) -> Manifest {
        let length = shards.iter().map(|s| s.length).fold(0u64, u64::saturating_add);
        Manifest { format: FORMAT.into(), format_version: FORMAT_VERSION, version, length, columns, shards }
    }

    /// Parse and validate a manifest read from `name` (for errors).
    ///
    /// # Errors
    /// `BadDataset` naming the rule broken.
    pub fn parse(name: &str, bytes: &[u8]) -> Result<Manifest> {
        let bad = |check: String| Error::BadDataset { dataset: name.to_string(), check };
        if bytes.len() as u64 > MAX_MANIFEST_BYTES {
            return Err(bad(format!("manifest is {} bytes (at most {MAX_MANIFEST_BYTES})", bytes.len())));
        }
        // The format field first, so that another JSON file gets a clear word.
        #[derive(Deserialize)]
        struct Probe {
            format: Option<String>,
            format_version: Option<u32>,
        }
        let probe: Probe =
            serde_json::from_slice(bytes).map_err(|e| bad(format!("manifest is not JSON: {e}")))?;
        if probe.format.as_deref() != Some(FORMAT) {
            return Err(bad(format!("not a zrecord dataset manifest (its format is {:?})", probe.format)));
        }
        match probe.format_version {
            Some(FORMAT_VERSION) => {}
            v => {
                return Err(bad(format!(
                    "manifest format_version {v:?} (this zrecord reads {FORMAT_VERSION}; upgrade zrecord)"
                )))
            }
        }
        let manifest: Manifest =
            serde_json::from_slice(bytes).map_err(|e| bad(format!("manifest does not decode: {e}")))?;
        manifest.validate().map_err(bad)?;
        Ok(manifest)
    }

    /// Check every rule of a manifest.
    ///
    /// # Errors
    /// A message naming the rule and where it broke.
    pub fn validate(&self) -> Result<(), String> {
        if self.version == 0 {
            return Err("version 0 (versions start at 1)".into());
        }
        if self.columns.is_empty() {
            return Err("no columns".into());
        }
        if self.columns.len() > MAX_COLUMNS {
            return Err(format!("{} columns (at most {MAX_COLUMNS})", self.columns.len()));
        }
        for (i, c) in self.columns.iter().enumerate() {
            layout::check_name("column", &c.name)?;
            if self.columns[..i].iter().any(|o| o.name == c.name) {
                return Err(format!("column {:?} is listed twice", c.name));
            }
            c.schema().map_err(|e| format!("column {:?}: {e}", c.name))?;
            c.check_arrow().map_err(|e| format!("column {:?}: {e}", c.name))?;
            let codec = c.codec().map_err(|e| format!("column {:?}: {e}", c.name))?;
            if c.dict.is_some() && codec != Codec::ZstdDict {
                return Err(format!("column {:?} names a dictionary but its codec is {}", c.name, c.codec));
            }
        }
        let mut total = 0u64;
        let mut seen = std::collections::HashSet::with_capacity(self.shards.len());
        for (k, s) in self.shards.iter().enumerate() {
            let at = || format!("shard {k} ({})", s.path);
            layout::check_shard_path(&s.path).map_err(|e| format!("{}: {e}", at()))?;
            if !seen.insert(s.path.as_str()) {
                return Err(format!("{}: listed twice", at()));
            }
            total = total.checked_add(s.length).ok_or_else(|| format!("{}: lengths overflow", at()))?;
            for c in &self.columns {
                let Some(files) = s.columns.get(&c.name) else {
                    return Err(format!("{}: column {:?} missing", at(), c.name));
                };
                if files.sums.is_some_and(|n| n < crate::format::sums::HEADER_LEN) {
                    return Err(format!("{}: column {:?}: sums.zr too short", at(), c.name));
                }
            }
            if let Some(extra) = s.columns.keys().find(|n| !self.columns.iter().any(|c| &c.name == *n)) {
                return Err(format!("{}: column {extra:?} is not one of the dataset's", at()));
            }
        }
        if total != self.length {
            return Err(format!("length is {} but the shards hold {total} records", self.length));
        }
        Ok(())
    }

    /// The manifest as stored: pretty JSON, one trailing newline.
    pub fn to_json(&self) -> Vec<u8> {
        let mut out = serde_json::to_vec_pretty(self).expect("a manifest serializes");
        out.push(b'\n');
        out
    }

    /// The index of column `name`.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }

    /// Check what a (shard, column) store says of itself against what the
    /// manifest says: schema, codec, length and file sizes (`data` is
    /// checked when the driver knows it).
    ///
    /// # Errors
    /// `BadShard` naming the dataset, the shard and the check.
    pub fn check_store(
        &self,
        dataset: &str,
        shard: usize,
        column: usize,
        info: &StoreInfo,
        dict: Option<&[u8]>,
    ) -> Result<()> {
        let s = &self.shards[shard];
        let c = &self.columns[column];
        let files = &s.columns[&c.name];
        let bad = |check: String| Error::BadShard {
            dataset: dataset.to_string(),
            shard: s.path.clone(),
            check: format!("column {:?}: {check}", c.name),
        };
        if let Some(why) = c.mismatch(&ColumnSpec::of_store(&c.name, info, None)) {
            return Err(bad(why));
        }
        if info.len() != s.length {
            return Err(bad(format!(
                "the store holds {} records, the manifest says {}",
                info.len(),
                s.length
            )));
        }
        if info.sizes.meta != files.meta {
            return Err(bad(format!(
                "meta.zr is {} bytes, the manifest says {}",
                info.sizes.meta, files.meta
            )));
        }
        if info.sizes.dict != files.dict {
            return Err(bad(format!(
                "dict.zr is {:?} bytes, the manifest says {:?}",
                info.sizes.dict, files.dict
            )));
        }
        if let (Some(want), Some(got)) = (&c.dict, dict) {
            if !want.matches(got) {
                return Err(bad("dict.zr is not the column's shared dictionary".into()));
            }
        }
        Ok(())
    }

    /// Check `data.zr`'s size, once a driver knows it.
    ///
    /// # Errors
    /// `BadShard` naming the dataset, the shard and the sizes.
    pub fn check_data_size(&self, dataset: &str, shard: usize, column: usize, data: u64) -> Result<()> {
        let s = &self.shards[shard];
        let c = &self.columns[column];
        let want = s.columns[&c.name].data;
        if data != want {
            return Err(Error::BadShard {
                dataset: dataset.to_string(),
                shard: s.path.clone(),
                check: format!("column {:?}: data.zr is {data} bytes, the manifest says {want}", c.name),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        let col = ColumnSpec {
            name: "x".into(),
            kind: ColumnKind::Dense,
            dtype: "<f4".into(),
            item_shape: Some(vec![2]),
            codec: "zstd".into(),
            dict: None,
            arrow: None,
        };
        let files = ShardFiles { meta: 4096 + 16 * 3, data: 30, dict: None, sums: None };
        let shard = |n: &str, len| ShardEntry {
            path: format!("shards/{n}"),
            length: len,
            columns: [("x".to_string(), files)].into(),
        };
        Manifest::new(1, vec![col], vec![shard("a", 3), shard("b", 3)])
    }

    #[test]
    fn round_trips() {
        let m = sample();
        assert_eq!(Manifest::parse("d", &m.to_json()).unwrap(), m);
        assert_eq!(m.length, 6);
        let mut arrow = sample();
        arrow.columns[0].arrow = Some("fixed_size_list".into());
        let json = arrow.to_json();
        assert!(String::from_utf8_lossy(&json).contains("\"arrow\": \"fixed_size_list\""));
        assert_eq!(Manifest::parse("d", &json).unwrap(), arrow);
        // A manifest without the attribute (every one before it) reads as before.
        assert!(!String::from_utf8_lossy(&m.to_json()).contains("arrow"));
    }

    #[test]
    fn refuses_broken_manifests() {
        type Break = Box<dyn Fn(&mut Manifest)>;
        let cases: Vec<(Break, &str)> = vec![
            (Box::new(|m| m.length = 7), "shards hold 6"),
            (Box::new(|m| m.version = 0), "version 0"),
            (Box::new(|m| m.shards[1].path = "shards/a".into()), "listed twice"),
            (Box::new(|m| m.shards[1].path = "../etc".into()), "shard 1"),
            (Box::new(|m| m.shards[0].columns.clear()), "column \"x\" missing"),
            (Box::new(|m| m.columns[0].codec = "lz4".into()), "unknown codec"),
            (Box::new(|m| m.columns[0].item_shape = None), "needs an item_shape"),
            (Box::new(|m| m.columns[0].name = "a/b".into()), "column"),
            (Box::new(|m| m.columns.clear()), "no columns"),
            (Box::new(|m| m.columns[0].arrow = Some("utf8".into())), "unknown arrow type \"utf8\""),
            (
                Box::new(|m| m.columns[0].arrow = Some("string".into())),
                "needs a ragged |u1 column, not dense <f4",
            ),
        ];
        for (breaks, want) in cases {
            let mut m = sample();
            breaks(&mut m);
            let e = Manifest::parse("ds", &m.to_json()).unwrap_err().to_string();
            assert!(e.contains(want) && e.starts_with("ds"), "{e} (wanted {want})");
        }
        for bytes in [
            &b"{"[..],
            b"[]",
            b"{\"format\":\"other\"}",
            b"{\"format\":\"zrecord-dataset\",\"format_version\":9}",
        ] {
            assert!(matches!(Manifest::parse("ds", bytes), Err(Error::BadDataset { .. })));
        }
    }
}
