//! Turning a request target into a file under the served root, refusing
//! anything that could name a file outside it.
//!
//! Two gates: the URL path is checked segment by segment *after*
//! percent-decoding (so `%2e%2e` and `%2f` cannot smuggle `..` or a separator
//! past the check), then no symlink on the path may lead out of the canonical
//! root (so a symlink inside the root that points outside is refused too).
//! The second gate is one system call where the platform has it (open the
//! path refusing any symlink on it: a path of plain names with no symlink
//! stays under the root); a path that does hold a symlink is walked segment
//! by segment, and each symlink must resolve under the root.

use std::borrow::Cow;
use std::fs::{File, Metadata};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use super::os;

/// Why a request path was refused before touching the file system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Bad percent-encoding or not UTF-8: 400.
    Malformed,
    /// `..`, `.`, an empty segment, an encoded separator, NUL or anything else
    /// that is not a plain file name: 403.
    Forbidden,
}

/// The path part of a request target, decoded and checked.
///
/// Borrowed from the request when it holds no percent-encoding (a store
/// reader's requests never do), so the common request allocates nothing here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UrlPath<'a> {
    /// The decoded path without its leading `/`, its trailing `/` kept
    /// (`""` for the root): plain names joined by `/`, so splitting it on
    /// `/` gives back the checked segments.
    relative: Cow<'a, str>,
}

impl UrlPath<'_> {
    /// The decoded path without its leading `/` (`""` for the root).
    pub fn relative(&self) -> &str {
        &self.relative
    }

    /// The path ends in `/` (a directory-style URL; the root included).
    pub fn trailing_slash(&self) -> bool {
        self.relative.is_empty() || self.relative.ends_with('/')
    }

    /// The decoded segments (no empty one for a trailing `/`).
    #[cfg(test)]
    fn segments(&self) -> Vec<&str> {
        self.relative.split('/').filter(|s| !s.is_empty()).collect()
    }
}

/// Split and decode a raw URL path (`/a/b%20c`) into checked segments.
///
/// Every segment must decode to a single normal path component: no `.` or
/// `..`, no `/` or `\`, no NUL, no drive prefix, not empty. Only the final
/// segment may be empty (a trailing slash).
///
/// # Errors
///
/// [`Refused::Malformed`] for bad percent-encoding or non-UTF-8 bytes,
/// [`Refused::Forbidden`] for a segment that is not a plain name.
pub(crate) fn parse_url_path(raw: &str) -> Result<UrlPath<'_>, Refused> {
    let Some(rest) = raw.strip_prefix('/') else {
        return Err(Refused::Forbidden);
    };
    let encoded = rest.contains('%');
    let mut decoded = String::new();
    let mut parts = rest.split('/').peekable();
    while let Some(part) = parts.next() {
        let last = parts.peek().is_none();
        if part.is_empty() {
            if last {
                break;
            }
            // `//etc/passwd`, `/a//b`: never produced by a sane client.
            return Err(Refused::Forbidden);
        }
        let seg = if encoded { percent_decode(part)? } else { Cow::Borrowed(part) };
        if !is_plain_name(&seg) {
            return Err(Refused::Forbidden);
        }
        if encoded {
            decoded.push_str(&seg);
            if !last {
                decoded.push('/');
            }
        }
    }
    let relative = if encoded { Cow::Owned(decoded) } else { Cow::Borrowed(rest) };
    Ok(UrlPath { relative })
}

fn is_plain_name(seg: &str) -> bool {
    if seg.contains(['/', '\\', '\0']) {
        return false;
    }
    let mut comps = Path::new(seg).components();
    matches!((comps.next(), comps.next()), (Some(Component::Normal(c)), None) if c == seg)
}

fn percent_decode(s: &str) -> Result<Cow<'_, str>, Refused> {
    if !s.contains('%') {
        return Ok(Cow::Borrowed(s));
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = |c: u8| (c as char).to_digit(16);
            match (b.get(i + 1).copied().and_then(hex), b.get(i + 2).copied().and_then(hex)) {
                (Some(h), Some(l)) => out.push((h * 16 + l) as u8),
                _ => return Err(Refused::Malformed),
            }
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map(Cow::Owned).map_err(|_| Refused::Malformed)
}

/// Percent-encode one path segment for use in a URL (RFC 3986 unreserved
/// characters pass through).
pub(crate) fn percent_encode_segment(seg: &str) -> String {
    let mut out = String::with_capacity(seg.len());
    for &c in seg.as_bytes() {
        if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~') {
            out.push(c as char);
        } else {
            out.push_str(&format!("%{c:02X}"));
        }
    }
    out
}

/// A regular file inside the root, opened.
#[derive(Debug)]
pub(crate) struct OpenFile {
    /// Shared: the server keeps files open between requests (`files.rs`).
    pub file: Arc<File>,
    /// Metadata of the opened file (of its inode): what we stat is what we send.
    pub meta: Metadata,
    /// Its path under the root, with symlinks resolved.
    pub path: PathBuf,
    /// Reached through no symlink.
    pub direct: bool,
}

/// Why a checked URL path names no servable file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotServed {
    /// The path exists but resolves outside the root (a symlink escaping it).
    Outside,
    /// Nothing there, or not a regular file.
    Missing,
}

/// Find the regular file that `relative` (plain names joined by `/`, as
/// [`UrlPath::relative`] gives) names under `root` (which must already be
/// canonical), following symlinks only while they stay inside `root`.
///
/// The path is first opened in one call that refuses any symlink on it; only
/// a path that holds one (or a platform without that call) is walked down from
/// the root one segment at a time: a segment that is not a symlink keeps the
/// path under the root, and a symlink is resolved in full and must land under
/// the root. The walk costs an `lstat` per segment; canonicalizing the whole
/// path would cost a `readlink` per component of the root's own path.
pub(crate) fn resolve(root: &Path, relative: &str) -> Result<OpenFile, NotServed> {
    if relative.is_empty() {
        return Err(NotServed::Missing);
    }
    let mut path = root.join(relative);
    let (file, direct) = match os::open_without_symlinks(&path) {
        Ok(Some(file)) => (file, true),
        // No symlink was in the way: the walk could only fail the same way.
        Err(_) => return Err(NotServed::Missing),
        Ok(None) => {
            path = walk(root, relative)?;
            (os::open_read(&path).map_err(|_| NotServed::Missing)?, false)
        }
    };
    match file.metadata() {
        Ok(meta) if meta.is_file() => Ok(OpenFile { file: Arc::new(file), meta, path, direct }),
        _ => Err(NotServed::Missing),
    }
}

/// `relative` under `root` with every symlink on it resolved, if each one
/// stays under `root`.
fn walk(root: &Path, relative: &str) -> Result<PathBuf, NotServed> {
    let mut path = root.to_path_buf();
    for seg in relative.split('/') {
        path.push(seg);
        let meta = std::fs::symlink_metadata(&path).map_err(|_| NotServed::Missing)?;
        if meta.file_type().is_symlink() {
            path = path.canonicalize().map_err(|_| NotServed::Missing)?;
            if !path.starts_with(root) {
                return Err(NotServed::Outside);
            }
        }
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segs(raw: &str) -> Result<Vec<String>, Refused> {
        parse_url_path(raw).map(|p| p.segments().into_iter().map(str::to_owned).collect())
    }

    #[test]
    fn plain_paths_decode() {
        assert_eq!(segs("/a/b.zr").unwrap(), ["a", "b.zr"]);
        assert_eq!(segs("/a%20b/c").unwrap(), ["a b", "c"]);
        assert_eq!(segs("/").unwrap(), Vec::<String>::new());
        let p = parse_url_path("/dir/").unwrap();
        assert!(p.trailing_slash());
        assert_eq!(p.relative(), "dir/");
        assert!(!parse_url_path("/dir").unwrap().trailing_slash());
        assert_eq!(parse_url_path("/").unwrap().relative(), "");
        assert!(parse_url_path("/").unwrap().trailing_slash());
        assert_eq!(parse_url_path("/a%20b/c%2Ed/").unwrap().relative(), "a b/c.d/");
        assert!(matches!(parse_url_path("/a/b").unwrap().relative, Cow::Borrowed("a/b")));
        assert_eq!(segs("/..a/b..").unwrap(), ["..a", "b.."]);
    }

    #[test]
    fn traversal_is_refused() {
        for bad in [
            "/../etc/passwd",
            "/a/../../b",
            "/%2e%2e/etc/passwd",
            "/%2E%2E%2Fetc%2Fpasswd",
            "/a%2fb",
            "/a%5cb",
            "/a\\b",
            "/..%5c..",
            "/.",
            "/./a",
            "/%2e/a",
            "//etc/passwd",
            "/a//b",
            "/a%00b",
            "etc/passwd",
            "",
            "*",
        ] {
            assert_eq!(segs(bad), Err(Refused::Forbidden), "{bad}");
        }
    }

    #[test]
    fn malformed_encoding_is_refused() {
        for bad in ["/%", "/%2", "/%zz", "/%ff%fe"] {
            assert_eq!(segs(bad), Err(Refused::Malformed), "{bad}");
        }
    }

    #[test]
    fn encode_segment_round_trips() {
        let s = "a b%/ü";
        let enc = percent_encode_segment(s);
        assert_eq!(enc, "a%20b%25%2F%C3%BC");
        assert_eq!(percent_decode(&enc).unwrap(), s);
    }
}
