//! The mixture sampler: composition bounds after every step and over every
//! window, per-source streams in stream order, seeking, elastic sharding,
//! weight schedules, and the golden streams the Python package also reads.

use proptest::prelude::*;
use zrecord::training::mixture::{Mixture, Weights};
use zrecord::training::sampler::Mode;
use zrecord::Error;

/// Each source's drawn count after every step `0..=steps`.
fn counts(m: &mut Mixture, steps: u64) -> Vec<Vec<u64>> {
    let mut out = vec![m.drawn().to_vec()];
    let (mut s, mut i) = (Vec::new(), Vec::new());
    for _ in 0..steps {
        m.fill_next(&mut s, &mut i).unwrap();
        let mut row = out.last().unwrap().clone();
        for &src in &s {
            row[src as usize] += 1;
        }
        assert_eq!(row, m.drawn(), "drawn() counts the batch's records");
        out.push(row);
    }
    out
}

/// After every step each source is within Tijdeman's bound of
/// `share × records`, and within 2 over every window of consecutive steps;
/// the shares being the weights read exactly (`parts / total`, integer
/// arithmetic). `c` holds each source's count after every step of `batch`
/// records. Returns the first violation.
fn bound_violation(weights: &[f64], batch: u64, c: &[Vec<u64>]) -> Option<String> {
    let w = Weights::new(weights).unwrap();
    let (parts, total) = (w.parts(), i128::from(w.total()));
    let s = parts.iter().filter(|&&p| p > 0).count() as i128;
    let b = i128::from(batch);
    for a in 0..c.len() {
        for z in a..c.len() {
            let records = (z - a) as i128 * b;
            for (i, &p) in parts.iter().enumerate() {
                // |count − p·records/total| scaled by total (and by 2s − 2 for Tijdeman's bound).
                let off = ((c[z][i] as i128 - c[a][i] as i128) * total - i128::from(p) * records).abs();
                let bad = if a == 0 {
                    // Tijdeman: at most 1 − 1/(2s − 2) (0 with one source).
                    let lim = if s == 1 { 0 } else { total * (2 * s - 3) };
                    off * (2 * s - 2).max(1) > lim
                } else {
                    off >= 2 * total
                };
                if bad {
                    return Some(format!(
                        "{weights:?} batch {batch}: source {i} steps {a}..{z}: off {off}/{total}"
                    ));
                }
            }
        }
    }
    None
}

fn check_bounds(weights: &[f64], batch: u64, steps: u64) {
    let mut m = Mixture::new(&vec![13; weights.len()], weights, batch, 1).unwrap();
    if let Some(v) = bound_violation(weights, batch, &counts(&mut m, steps)) {
        panic!("{v}");
    }
}

/// Counts after every step of the obvious schedule Tijdeman's improves on:
/// each record to the source furthest behind its share (lowest index on ties).
fn largest_deficit_counts(weights: &[f64], batch: u64, steps: u64) -> Vec<Vec<u64>> {
    let w = Weights::new(weights).unwrap();
    let (parts, total) = (w.parts(), i128::from(w.total()));
    let mut row = vec![0u64; parts.len()];
    let mut out = vec![row.clone()];
    for step in 0..steps {
        for r in 1..=batch {
            let n = i128::from(step * batch + r);
            let behind = |i: usize| i128::from(parts[i]) * n - row[i] as i128 * total;
            let i = (0..parts.len()).rev().max_by_key(|&i| behind(i)).unwrap();
            row[i] += 1;
        }
        out.push(row.clone());
    }
    out
}

#[test]
fn the_bound_holds_where_the_largest_deficit_schedule_breaks_it() {
    // Weight sets found by search where "give the record to the source
    // furthest behind" drifts past 1 − 1/(2s − 2); the chairman schedule
    // (Tijdeman's deadlines) must not.
    let weight_sets: &[&[f64]] =
        &[&[10.0, 3.0, 3.0, 10.0], &[13.0, 11.0, 13.0, 3.0, 3.0], &[2.0, 2.0, 3.0, 17.0, 16.0, 17.0]];
    for &w in weight_sets {
        let steps = 2 * w.iter().sum::<f64>() as u64;
        assert!(
            bound_violation(w, 1, &largest_deficit_counts(w, 1, steps)).is_some(),
            "{w:?}: the checker must reject the largest-deficit schedule"
        );
        for batch in [1, 2, 3, 5, 64] {
            check_bounds(w, batch, steps);
        }
    }
}

#[test]
fn composition_within_one_after_every_step_and_two_over_every_window() {
    let weight_sets: &[&[f64]] = &[
        &[0.7, 0.2, 0.1],
        &[1.0, 1.0, 1.0],
        &[0.5, 0.5],
        &[0.9, 0.05, 0.05],
        &[3.0, 1.0],
        &[1.0, 2.0, 3.0, 4.0, 5.0],
        &[0.01, 0.99],
        &[0.0, 1.0, 0.0, 2.0],
        &[1.0],
        &[0.13, 0.29, 0.31, 0.07, 0.11, 0.09],
        &[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 100.0],
    ];
    for &w in weight_sets {
        for batch in [1, 3, 7, 10, 64, 100] {
            check_bounds(w, batch, 120);
        }
    }
}

#[test]
fn composition_against_the_weights_as_given() {
    // Within 1 of weight × records drawn, in floating point, for weights
    // that are small fractions (every one above) ...
    let mut m = Mixture::new(&[50, 50, 50], &[0.7, 0.2, 0.1], 7, 3).unwrap();
    for (k, row) in counts(&mut m, 500).iter().enumerate() {
        for (i, w) in [0.7, 0.2, 0.1].iter().enumerate() {
            assert!((row[i] as f64 - w * (7 * k) as f64).abs() <= 1.0, "step {k} source {i}");
        }
    }
    // ... and within 1 + records / 2^20 for those rounded to parts of 2^20.
    let w = [std::f64::consts::PI, std::f64::consts::E, 1.0];
    let sum: f64 = w.iter().sum();
    let mut m = Mixture::new(&[50, 50, 50], &w, 64, 3).unwrap();
    for (k, row) in counts(&mut m, 300).iter().enumerate() {
        let records = (64 * k) as f64;
        for i in 0..3 {
            let off = (row[i] as f64 - w[i] / sum * records).abs();
            assert!(off <= 1.0 + records / (1u64 << 20) as f64, "step {k} source {i}: {off}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(60))]
    #[test]
    fn composition_bounds_for_random_weights(
        weights in prop::collection::vec(0u32..40, 1..9),
        batch in 1u64..50,
    ) {
        prop_assume!(weights.iter().any(|&w| w > 0));
        let weights: Vec<f64> = weights.iter().map(|&w| f64::from(w)).collect();
        check_bounds(&weights, batch, 60);
    }
}

/// Source `src`'s indices over `steps` steps, in the order drawn.
fn stream_of(m: &mut Mixture, src: u32, steps: u64) -> Vec<u64> {
    let mut out = Vec::new();
    for _ in 0..steps {
        let (s, i) = m.next_batch().unwrap();
        out.extend(s.iter().zip(&i).filter(|(&s, _)| s == src).map(|(_, &i)| i));
    }
    out
}

#[test]
fn each_source_draws_its_own_stream_in_order() {
    let modes = [Mode::Sequential, Mode::Cyclic, Mode::Iid];
    let mk = || Mixture::new(&[11, 7, 5], &[0.5, 0.3, 0.2], 10, 9).unwrap().modes(&modes).unwrap();
    // Sequential: 0, 1, 2, ... wrapping at its length.
    let seq = stream_of(&mut mk(), 0, 40);
    assert_eq!(seq.len(), 200);
    assert!(seq.iter().enumerate().all(|(k, &i)| i == k as u64 % 11));
    // Cyclic: every epoch visits each record once, across batch boundaries
    // (7 does not divide the 3 records a batch takes): nothing is dropped.
    let cyc = stream_of(&mut mk(), 1, 70);
    assert_eq!(cyc.len(), 210);
    for epoch in cyc.chunks(7) {
        let mut e = epoch.to_vec();
        e.sort_unstable();
        assert_eq!(e, (0..7).collect::<Vec<_>>());
    }
    assert_ne!(cyc[..7], cyc[7..14], "each epoch is a fresh permutation");
    // IID: in range, every record seen, not a fixed pattern.
    let iid = stream_of(&mut mk(), 2, 100);
    assert!(iid.iter().all(|&i| i < 5));
    assert!((0..5).all(|r| iid.contains(&r)));
    // Another seed gives other streams.
    let other = Mixture::new(&[11, 7, 5], &[0.5, 0.3, 0.2], 10, 10).unwrap().modes(&modes).unwrap();
    assert_ne!(stream_of(&mut other.clone(), 1, 70), cyc);
}

/// `(sources, indices)` of every global batch in `range`, from `m` seeked.
fn run(m: &Mixture, from: u64, steps: u64) -> Vec<(Vec<u32>, Vec<u64>)> {
    let mut m = m.clone();
    m.seek(from);
    (0..steps).map(|_| m.next_batch().unwrap()).collect()
}

fn scheduled(batch: u64) -> Mixture {
    Mixture::new(&[101, 37, 1000], &[0.7, 0.2, 0.1], batch, 5)
        .unwrap()
        .modes(&[Mode::Cyclic, Mode::Iid, Mode::Sequential])
        .unwrap()
        .schedule(40, &[0.2, 0.0, 0.8])
        .unwrap()
        .schedule(90, &[1.0, 1.0, 1.0])
        .unwrap()
}

#[test]
fn seeking_equals_running_through() {
    for batch in [1, 6, 64] {
        let m = scheduled(batch);
        let whole = run(&m, 0, 150);
        for k in [0, 1, 39, 40, 41, 89, 90, 91, 120] {
            assert_eq!(run(&m, k, 150 - k), whole[k as usize..], "batch {batch}: seek({k})");
        }
    }
}

#[test]
fn seeking_far_is_cheap_and_exact() {
    // 7:2:1 repeats every 10 records, so after k steps of 10 the counts are exact.
    let mut m = Mixture::new(&[3, 5, 7], &[0.7, 0.2, 0.1], 10, 1).unwrap();
    let k = 1u64 << 40;
    let t = std::time::Instant::now();
    m.seek(k);
    assert_eq!(m.drawn(), &[7 * k, 2 * k, k]);
    // Thirds of a batch of 64 after 10^12 steps: within 1 of a third each.
    let mut m = Mixture::new(&[3, 5, 7], &[1.0, 1.0, 1.0], 64, 1).unwrap();
    m.seek(1_000_000_000_000);
    let third = 64_000_000_000_000u64 / 3;
    assert!(m.drawn().iter().all(|&d| d.abs_diff(third) <= 1), "{:?}", m.drawn());
    assert!(t.elapsed().as_secs() < 5, "seek replays at most one period");
    // And the batch there is the one a neighbour's step leads to.
    let mut before = m.clone();
    before.seek(999_999_999_999);
    before.next_batch().unwrap();
    assert_eq!(before.drawn(), m.drawn());
    assert_eq!(before.next_batch().unwrap(), m.next_batch().unwrap());
}

#[test]
fn every_world_size_slices_the_same_global_batches() {
    let m = scheduled(64);
    let global = run(&m, 0, 120);
    for world in [1u64, 2, 4, 8] {
        for resume in [0u64, 33, 40, 95] {
            let slices: Vec<Vec<(Vec<u32>, Vec<u64>)>> =
                (0..world).map(|r| run(&m.clone().shard(r, world).unwrap(), resume, 120 - resume)).collect();
            for (k, want) in global[resume as usize..].iter().enumerate() {
                let (mut s, mut i) = (Vec::new(), Vec::new());
                for rank in &slices {
                    assert_eq!(rank[k].0.len() as u64, 64 / world, "every rank the same count");
                    s.extend_from_slice(&rank[k].0);
                    i.extend_from_slice(&rank[k].1);
                }
                assert_eq!((&s, &i), (&want.0, &want.1), "world {world} resumed at {resume}: step {k}");
            }
        }
    }
    for world in [3, 5, 7, 128] {
        match m.clone().shard(0, world) {
            Err(Error::WorldSize { batch_size: 64, world: w }) => assert_eq!(w, world),
            other => panic!("world {world}: {other:?}"),
        }
    }
    assert!(matches!(m.clone().shard(2, 2), Err(Error::Config(_))));
}

#[test]
fn a_schedule_change_applies_at_its_step_from_a_fresh_count() {
    let m = scheduled(10);
    let mut through = m.clone();
    let c = counts(&mut through, 90);
    // From step 40 on, 0.2/0/0.8 of the records since step 40, within 1.
    for k in 40..=90 {
        let since: Vec<u64> = (0..3).map(|i| c[k][i] - c[40][i]).collect();
        let records = (10 * (k - 40)) as f64;
        for (i, w) in [0.2, 0.0, 0.8].iter().enumerate() {
            assert!((since[i] as f64 - w * records).abs() <= 1.0, "step {k} source {i}");
        }
    }
    // Resumed after the change, or passing through it: the same batches.
    assert_eq!(run(&m, 45, 10), run(&m, 0, 55)[45..]);
    // A schedule is part of the run: another one differs from its step on.
    let other = Mixture::new(&[101, 37, 1000], &[0.7, 0.2, 0.1], 10, 5)
        .unwrap()
        .modes(&[Mode::Cyclic, Mode::Iid, Mode::Sequential])
        .unwrap();
    assert_eq!(run(&other, 0, 40), run(&m, 0, 40));
    assert_ne!(run(&other, 40, 1), run(&m, 40, 1));
    assert!(matches!(m.clone().schedule(40, &[1.0, 1.0, 1.0]), Err(Error::Config(_))));
    assert!(matches!(m.clone().schedule(7, &[1.0, 1.0]), Err(Error::Config(_))));
}

#[test]
fn bad_settings_are_refused() {
    let cfg = |r: zrecord::Result<Mixture>| matches!(r, Err(Error::Config(_)));
    assert!(cfg(Mixture::new(&[], &[], 4, 0)));
    assert!(cfg(Mixture::new(&[3, 0], &[1.0, 1.0], 4, 0)));
    assert!(cfg(Mixture::new(&[3, 3], &[1.0], 4, 0)));
    assert!(cfg(Mixture::new(&[3, 3], &[1.0, 1.0], 0, 0)));
    assert!(cfg(Mixture::new(&[3, 3], &[0.0, 0.0], 4, 0)));
    assert!(cfg(Mixture::new(&[3, 3], &[1.0, 1.0], 4, 0).unwrap().modes(&[Mode::Iid])));
}

const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mixture-golden.json");

/// The cases of the golden file: what the Python package replays too.
fn golden_cases() -> serde_json::Value {
    serde_json::json!([
        {"lengths": [100, 50, 10], "weights": [0.7, 0.2, 0.1], "batch_size": 10, "seed": 42,
         "modes": [2, 2, 2], "schedule": {}, "rank": 0, "world": 1, "seek": 0, "steps": 6},
        {"lengths": [7, 5, 3], "weights": [1, 1, 1], "batch_size": 8, "seed": 7,
         "modes": [0, 1, 2], "schedule": {"3": [0.5, 0.0, 0.5]}, "rank": 1, "world": 2, "seek": 1, "steps": 5},
        {"lengths": [1000, 3], "weights": [0.9, 0.1], "batch_size": 12, "seed": 1,
         "modes": [1, 2], "schedule": {"0": [0.25, 0.75], "4": [1.2345678901, 1.0]}, "rank": 3, "world": 4,
         "seek": 2, "steps": 6},
        {"lengths": [9], "weights": [2.0], "batch_size": 4, "seed": 18446744073709551615u64,
         "modes": [2], "schedule": {}, "rank": 0, "world": 1, "seek": 1000000007, "steps": 3},
    ])
}

fn build(case: &serde_json::Value) -> Mixture {
    let u = |k: &str| case[k].as_u64().unwrap();
    let lengths: Vec<u64> = serde_json::from_value(case["lengths"].clone()).unwrap();
    let weights: Vec<f64> = serde_json::from_value(case["weights"].clone()).unwrap();
    let modes: Vec<u8> = serde_json::from_value(case["modes"].clone()).unwrap();
    let modes: Vec<Mode> = modes.into_iter().map(|c| Mode::try_from(c).unwrap()).collect();
    let mut m = Mixture::new(&lengths, &weights, u("batch_size"), u("seed")).unwrap().modes(&modes).unwrap();
    for (step, w) in case["schedule"].as_object().unwrap() {
        let w: Vec<f64> = serde_json::from_value(w.clone()).unwrap();
        m = m.schedule(step.parse().unwrap(), &w).unwrap();
    }
    let mut m = m.shard(u("rank"), u("world")).unwrap();
    m.seek(u("seek"));
    m
}

fn batches(case: &serde_json::Value) -> serde_json::Value {
    let mut m = build(case);
    let steps = case["steps"].as_u64().unwrap();
    let out: Vec<_> = (0..steps).map(|_| m.next_batch().unwrap()).collect();
    serde_json::to_value(out).unwrap()
}

/// Regenerate with `ZRECORD_BLESS=1 cargo test --test mixture golden` (only
/// when a stream is meant to change: Python checks the same file).
#[test]
fn golden_streams() {
    let cases = golden_cases();
    if std::env::var_os("ZRECORD_BLESS").is_some() {
        let with: Vec<_> = cases
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let mut c = c.clone();
                c["batches"] = batches(&c);
                c
            })
            .collect();
        let text = serde_json::to_string_pretty(&serde_json::json!({"cases": with})).unwrap();
        std::fs::write(GOLDEN, text + "\n").unwrap();
    }
    let text = std::fs::read_to_string(GOLDEN).unwrap();
    let golden: serde_json::Value = serde_json::from_str(&text).unwrap();
    let stored = golden["cases"].as_array().unwrap();
    assert_eq!(stored.len(), cases.as_array().unwrap().len());
    for (k, case) in stored.iter().enumerate() {
        assert!(!case["batches"].as_array().unwrap().is_empty());
        assert_eq!(batches(case), case["batches"], "case {k}");
    }
}
