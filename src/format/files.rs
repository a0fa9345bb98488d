//! The files of a store directory, named once.

/// One of a store's files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StoreFile {
    /// `meta.zr`: Header, schema and the location table.
    Meta = 0,
    /// `data.zr`: the stored records, back to back.
    Data = 1,
    /// `dict.zr`: the trained zstd dictionary of a `zstd_dict` store.
    Dict = 2,
    /// `sums.zr`: the checksum sidecar of a sealed store (ours; loaderx
    /// ignores it; see [`super::sums`]).
    Sums = 3,
}

impl StoreFile {
    /// Every file, in index order.
    pub const ALL: [StoreFile; 4] = [StoreFile::Meta, StoreFile::Data, StoreFile::Dict, StoreFile::Sums];
    /// How many files a store may have.
    pub const COUNT: usize = 4;

    /// The file's name inside the store directory.
    pub const fn name(self) -> &'static str {
        match self {
            StoreFile::Meta => META,
            StoreFile::Data => DATA,
            StoreFile::Dict => DICT,
            StoreFile::Sums => SUMS,
        }
    }

    /// The file called `name`, if it is one of a store's.
    pub fn from_name(name: &str) -> Option<StoreFile> {
        StoreFile::ALL.into_iter().find(|f| f.name() == name)
    }
}

impl std::fmt::Display for StoreFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `meta.zr`
pub const META: &str = "meta.zr";
/// `data.zr`
pub const DATA: &str = "data.zr";
/// `dict.zr`
pub const DICT: &str = "dict.zr";
/// `sums.zr`
pub const SUMS: &str = "sums.zr";
