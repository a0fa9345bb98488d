//! `zrecord sample`: the sampler's batches, one JSON array per line, exactly
//! as loaderx's `zsampler` yields them (`[3, 1, 4]`).

use super::common::{parse_shard, CliResult, Ctx, Out};
use zrecord::training::sampler::{Mode, Sampler};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Number of records to sample from.
    #[arg(long = "len", value_name = "N")]
    length: u64,
    /// Indices per (global) batch.
    #[arg(long, value_name = "B")]
    batch: u64,
    /// sequential, iid (with replacement) or cyclic (without replacement).
    #[arg(long, default_value = "sequential", value_parser = parse_mode)]
    mode: Mode,
    /// Seed of the stream.
    #[arg(long, default_value_t = 0, value_name = "S")]
    seed: u64,
    /// Start at this step (resume).
    #[arg(long, value_name = "K")]
    seek: Option<u64>,
    /// Batches to print [default: one pass, ceil(N / B)].
    #[arg(long, value_name = "T")]
    steps: Option<u64>,
    /// Print only this consumer's slice of each batch.
    #[arg(long, value_name = "RANK/WORLD", value_parser = parse_shard)]
    shard: Option<(u64, u64)>,
}

fn parse_mode(s: &str) -> Result<Mode, String> {
    s.parse::<Mode>().map_err(|e| e.to_string())
}

pub fn run(_ctx: &Ctx, args: Args) -> CliResult {
    let mut sampler = Sampler::new(args.length, args.batch, args.mode, args.seed)?;
    if let Some((rank, world)) = args.shard {
        sampler = sampler.shard(rank, world)?;
    }
    if let Some(step) = args.seek {
        sampler.seek(step);
    }
    let steps = args.steps.unwrap_or(args.length.div_ceil(args.batch));
    let mut out = Out::new();
    let mut batch = Vec::new();
    let mut line = String::new();
    for _ in 0..steps {
        sampler.try_fill_next(&mut batch)?;
        line.clear();
        line.push('[');
        for (k, i) in batch.iter().enumerate() {
            if k > 0 {
                line.push_str(", ");
            }
            line.push_str(&i.to_string());
        }
        line.push(']');
        out.line(&line)?;
    }
    out.flush()
}
