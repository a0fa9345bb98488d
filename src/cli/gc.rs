//! `zrecord gc DATASET --older-than AGE [--dry-run] [--json]`: remove
//! the shards no committed version names (a crashed or retried writer's)
//! once they are older than AGE, so a shard still being written is left
//! alone (see `zrecord::dataset::writer::gc`).

use super::common::{CliResult, Ctx, Fail, Out};
use super::records::{is_local_dataset, local_path, url_of};
use serde_json::json;
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Dataset directory or bucket prefix (s3://, gs://, az://) holding zrecord.json.
    dataset: PathBuf,
    /// Only shards created longer ago than this: 90s, 30m, 1h, 2d (a shard
    /// younger than the longest write may still be on its way to a commit).
    #[arg(long, value_name = "AGE", value_parser = parse_age)]
    older_than: Duration,
    /// Say what would be removed, remove nothing.
    #[arg(long)]
    dry_run: bool,
    /// One JSON object: {"path", "dry_run", "removed": [shard paths]}.
    #[arg(long)]
    json: bool,
}

/// `90s`, `30m`, `1h`, `2d` (a bare number is seconds).
pub fn parse_age(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (digits, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: u64 =
        digits.parse().map_err(|_| format!("{s:?}: expected a number and a unit, e.g. 30m, 1h, 2d"))?;
    let secs = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (s, m, h or d)")),
    };
    Ok(Duration::from_secs(n.saturating_mul(secs)))
}

pub fn run(_ctx: &Ctx, a: Args) -> CliResult {
    // A bucket URL as given; a directory (or file:// URL) as its path.
    let target = match url_of(&a.dataset)? {
        Some(url) => url.to_string(),
        None => {
            let dir = local_path(&a.dataset)?;
            if !is_local_dataset(&dir) {
                return Err(Fail::Msg(format!("{}: not a dataset (no zrecord.json there)", dir.display())));
            }
            dir.display().to_string()
        }
    };
    let removed = zrecord::dataset::writer::gc(&target, a.older_than, a.dry_run)?;
    let mut out = Out::new();
    if a.json {
        out.line(&json!({"path": target, "dry_run": a.dry_run, "removed": removed}).to_string())?;
        return out.flush();
    }
    let what = if a.dry_run { "would remove" } else { "removed" };
    for path in &removed {
        out.line(&format!("{what} {}/{path}", target.trim_end_matches('/')))?;
    }
    out.line(&format!(
        "{target}: {what} {} uncommitted shards older than {}s{}",
        removed.len(),
        a.older_than.as_secs(),
        if a.dry_run && !removed.is_empty() { " (run again without --dry-run to remove them)" } else { "" }
    ))?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::parse_age;

    #[test]
    fn ages() {
        assert_eq!(parse_age("90").unwrap().as_secs(), 90);
        assert_eq!(parse_age("30m").unwrap().as_secs(), 1800);
        assert_eq!(parse_age("2d").unwrap().as_secs(), 172_800);
        assert!(parse_age("1w").is_err() && parse_age("h").is_err());
    }
}
