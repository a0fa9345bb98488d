//! Where a dataset's files live, relative to its root (a directory, an HTTP
//! prefix or a bucket prefix), named once:
//!
//! ```text
//! zrecord.json                       the newest manifest (a copy of its version's)
//! versions/00000000000000000007.json version 7's manifest, created once, never replaced
//! shards/<name>/<column>/meta.zr ... one ordinary store per (shard, column)
//! ```

/// The newest manifest, at the dataset's root.
pub const MANIFEST: &str = "zrecord.json";
/// The folder of committed versions.
pub const VERSIONS: &str = "versions";
/// The folder of shards.
pub const SHARDS: &str = "shards";

/// Version `n`'s manifest, relative to the root.
pub fn version_path(n: u64) -> String {
    format!("{VERSIONS}/{n:020}.json")
}

/// The version a file name of the versions folder holds, if it is one.
pub fn version_of(file_name: &str) -> Option<u64> {
    let digits = file_name.strip_suffix(".json")?;
    (digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.parse().ok()).flatten()
}

/// The store of `column` in the shard at `shard_path`, relative to the root.
pub fn store_path(shard_path: &str, column: &str) -> String {
    format!("{shard_path}/{column}")
}

/// A new shard's path: `shards/` and a name no other writer picks (the
/// time in milliseconds, then 64 random bits), so that a retried task never
/// overwrites a committed shard and names sort by creation.
pub fn new_shard_path(unix_millis: u64, random: u64) -> String {
    format!("{SHARDS}/{unix_millis:013}-{random:016x}")
}

/// The creation time (Unix milliseconds) a shard name made by
/// [`new_shard_path`] holds.
pub fn shard_created(name: &str) -> Option<u64> {
    let (millis, random) = name.split_once('-')?;
    (random.len() == 16 && u64::from_str_radix(random, 16).is_ok()).then(|| millis.parse().ok()).flatten()
}

/// A column name: the directory of its store in each shard, so a plain,
/// short file name (letters, digits, `_`, `-`, `.`; not starting with `.`).
///
/// # Errors
/// A message naming what is wrong.
pub fn check_name(what: &str, name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('.')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{what} name {name:?} is not 1-128 letters, digits, '_', '-' or '.' (not starting with '.')"
        ))
    }
}

/// A shard path: relative, inside the dataset (no `..`, no empty or hidden
/// parts), made of plain names.
///
/// # Errors
/// A message naming what is wrong.
pub fn check_shard_path(path: &str) -> Result<(), String> {
    if path.len() > 1024 {
        return Err("path longer than 1024 bytes".into());
    }
    let parts: Vec<&str> = path.split('/').collect();
    if parts.is_empty() || parts.iter().any(|p| check_name("path part", p).is_err()) {
        return Err(format!("path {path:?} is not relative plain names joined by '/' (inside the dataset)"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(version_path(7), "versions/00000000000000000007.json");
        assert_eq!(version_of("00000000000000000007.json"), Some(7));
        assert_eq!(version_of("7.json"), None);
        let p = new_shard_path(1_700_000_000_000, 0xab);
        assert_eq!(p, "shards/1700000000000-00000000000000ab");
        assert_eq!(shard_created(p.strip_prefix("shards/").unwrap()), Some(1_700_000_000_000));
        for bad in ["", "..", "a/../b", "/abs", "a//b", ".hidden", "a b", "a\\b"] {
            assert!(check_shard_path(bad).is_err(), "{bad}");
        }
        assert!(check_shard_path("shards/x-1/y.z").is_ok());
    }
}
