//! The loader over a mixture of stores: batches in the mixture's order,
//! state that checkpoints and resumes (across world sizes), and states of
//! other sources refused.

use std::path::Path;
use std::sync::Arc;
use zrecord::training::loader::{Gathered, Loader, LoaderBuilder};
use zrecord::training::mixture::Mixture;
use zrecord::training::sampler::Mode;
use zrecord::training::state::LoaderState;
use zrecord::{CreateOptions, Error, Records, Store, Writer};

const LENGTHS: [u64; 3] = [40, 25, 9];
const WEIGHTS: [f64; 3] = [0.7, 0.2, 0.1];
const MODES: [Mode; 3] = [Mode::Cyclic, Mode::Sequential, Mode::Iid];

/// Source `s`: a Dense i64 stream `id` holding `1000 s + i` and a Ragged u8
/// stream `tokens` whose record `i` is `i % 5 + 1` bytes of `s`.
fn write_source(dir: &Path, s: u64, len: u64) -> Vec<(String, Arc<dyn Records>)> {
    let id = dir.join(format!("s{s}-id"));
    let mut w = Writer::create_dense(&id, "<i8", &[], CreateOptions::default()).unwrap();
    w.append_typed(&(0..len as i64).map(|i| 1000 * s as i64 + i).collect::<Vec<_>>()).unwrap();
    w.close().unwrap();
    let tokens = dir.join(format!("s{s}-tokens"));
    let mut w = Writer::create_ragged(&tokens, "|u1", CreateOptions::default()).unwrap();
    let payloads: Vec<(Vec<u64>, Vec<u8>)> =
        (0..len).map(|i| (vec![i % 5 + 1], vec![s as u8; (i % 5 + 1) as usize])).collect();
    let records: Vec<(&[u64], &[u8])> = payloads.iter().map(|(sh, b)| (&sh[..], &b[..])).collect();
    w.append_ragged(&records).unwrap();
    w.close().unwrap();
    let open = |p: &Path| -> Arc<dyn Records> { Arc::new(Store::open(p).unwrap()) };
    vec![("id".into(), open(&id)), ("tokens".into(), open(&tokens))]
}

fn sources(dir: &Path) -> Vec<Vec<(String, Arc<dyn Records>)>> {
    (0..3).map(|s| write_source(dir, s, LENGTHS[s as usize])).collect()
}

/// The tests' mixture (batches of 16, a schedule change at step 30) over `sources`.
fn builder(sources: Vec<Vec<(String, Arc<dyn Records>)>>) -> LoaderBuilder {
    let mut b = Loader::builder()
        .batch_size(16)
        .seed(11)
        .modes(&MODES)
        .weights(&WEIGHTS)
        .schedule(30, &[0.1, 0.1, 0.8]);
    for src in sources {
        b = b.source(src);
    }
    b
}

fn loader(dir: &Path, rank: u64, world: u64) -> Loader {
    builder(sources_cached(dir)).shard(rank, world).workers(2).prefetch(4).build().unwrap()
}

/// Stores written once per directory, reopened by every loader.
fn sources_cached(dir: &Path) -> Vec<Vec<(String, Arc<dyn Records>)>> {
    if dir.join("s0-id").exists() {
        let open = |p: String| -> Arc<dyn Records> { Arc::new(Store::open(dir.join(p)).unwrap()) };
        (0..3)
            .map(|s| {
                vec![("id".into(), open(format!("s{s}-id"))), ("tokens".into(), open(format!("s{s}-tokens")))]
            })
            .collect()
    } else {
        sources(dir)
    }
}

/// `(step, sources, ids, token lengths)` of a delivered step, checked
/// against itself: every record's stream agrees with its source and index.
fn seen(g: &Gathered) -> (u64, Vec<u32>, Vec<i64>) {
    let ids = g.dense("id").unwrap().as_slice::<i64>().unwrap().to_vec();
    let tokens = g.ragged("tokens").unwrap();
    for (k, (&s, &i)) in g.sources().iter().zip(g.indices()).enumerate() {
        assert_eq!(ids[k], 1000 * i64::from(s) + i as i64, "record {k} of step {}", g.step());
        let (shape, bytes) = tokens.record(k);
        assert_eq!(shape, [i % 5 + 1]);
        assert!(bytes.iter().all(|&b| u32::from(b) == s));
    }
    (g.step(), g.sources().to_vec(), ids)
}

fn take(l: &mut Loader, n: usize) -> Vec<(u64, Vec<u32>, Vec<i64>)> {
    (0..n).map(|_| seen(&l.next_batch().unwrap())).collect()
}

#[test]
fn batches_follow_the_mixture() {
    let dir = tempfile::tempdir().unwrap();
    let mut l = loader(dir.path(), 0, 1);
    let mut m = Mixture::new(&LENGTHS, &WEIGHTS, 16, 11)
        .unwrap()
        .modes(&MODES)
        .unwrap()
        .schedule(30, &[0.1, 0.1, 0.8])
        .unwrap();
    for (step, sources, ids) in take(&mut l, 60) {
        let (s, i) = m.next_batch().unwrap();
        assert_eq!(sources, s, "step {step}");
        let want: Vec<i64> = s.iter().zip(&i).map(|(&s, &i)| 1000 * i64::from(s) + i as i64).collect();
        assert_eq!(ids, want, "step {step}");
    }
    assert_eq!(l.len(), LENGTHS.iter().sum::<u64>());
}

#[test]
fn state_resumes_the_same_run_on_any_world_size() {
    let dir = tempfile::tempdir().unwrap();
    let whole = take(&mut loader(dir.path(), 0, 1), 50);
    let mut first = loader(dir.path(), 0, 1);
    take(&mut first, 23);
    std::thread::sleep(std::time::Duration::from_millis(50)); // let the workers prefetch ahead
    let state = first.state_dict();
    assert_eq!(state.step, 23, "prefetched steps are not consumed");
    let json = state.to_json();
    drop(first);
    for world in [1u64, 2, 4, 8] {
        let state = LoaderState::from_json(&json).unwrap();
        let mut ranks: Vec<Loader> = (0..world).map(|r| loader(dir.path(), r, world)).collect();
        for l in &mut ranks {
            l.load_state_dict(&state).unwrap();
        }
        for (step, sources, ids) in &whole[23..] {
            let (mut s, mut i) = (Vec::new(), Vec::new());
            for l in &mut ranks {
                let (k, part_s, part_i) = seen(&l.next_batch().unwrap());
                assert_eq!(k, *step);
                assert_eq!(part_s.len() as u64, 16 / world);
                s.extend(part_s);
                i.extend(part_i);
            }
            assert_eq!((&s, &i), (sources, ids), "world {world} step {step}");
        }
    }
}

#[test]
fn loading_a_state_midway_drops_what_was_prefetched() {
    let dir = tempfile::tempdir().unwrap();
    let whole = take(&mut loader(dir.path(), 0, 1), 40);
    let mut l = loader(dir.path(), 0, 1);
    let early = l.state_dict();
    take(&mut l, 35);
    l.load_state_dict(&LoaderState { step: 5, ..early.clone() }).unwrap();
    assert_eq!(l.step(), 5);
    assert_eq!(take(&mut l, 35), whole[5..]);
    l.load_state_dict(&LoaderState { step: 31, ..early }).unwrap();
    assert_eq!(take(&mut l, 2), whole[31..33]);
}

#[test]
fn a_changed_source_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let state = loader(dir.path(), 0, 1).state_dict();
    // Source 2 rewritten with one more record.
    let other = tempfile::tempdir().unwrap();
    let mut srcs = sources_cached(dir.path());
    srcs[2] = write_source(other.path(), 2, LENGTHS[2] + 1);
    let mut l = builder(srcs).build().unwrap();
    let err = l.load_state_dict(&state).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::StateMismatch { .. }), "{err:?}");
    assert!(msg.contains("source 2 stream \"id\"") && msg.contains("length") && msg.contains("9"), "{msg}");
    // Same length, other bytes: a store rewritten in place.
    let mut changed = state.clone();
    changed.sources[1][1].stored_bytes += 1;
    let err = loader(dir.path(), 0, 1).load_state_dict(&changed).unwrap_err().to_string();
    assert!(err.contains("source 1 stream \"tokens\"") && err.contains("stored bytes"), "{err}");
    // Another mixture, seed or batch size.
    let mut other_mix = state.clone();
    other_mix.schedule[1].0 = 31;
    assert!(loader(dir.path(), 0, 1)
        .load_state_dict(&other_mix)
        .unwrap_err()
        .to_string()
        .contains("mixture"));
    let mut other_seed = state.clone();
    other_seed.seed = 12;
    assert!(loader(dir.path(), 0, 1).load_state_dict(&other_seed).unwrap_err().to_string().contains("seed"));
    // The state as saved still loads.
    loader(dir.path(), 0, 1).load_state_dict(&state).unwrap();
}

#[test]
fn bad_mixtures_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let srcs = sources(dir.path());
    let base = || {
        let mut b = Loader::builder().batch_size(16).weights(&WEIGHTS);
        for s in sources_cached(dir.path()) {
            b = b.source(s);
        }
        b
    };
    assert!(matches!(base().shard(0, 3).build(), Err(Error::WorldSize { batch_size: 16, world: 3 })));
    assert!(matches!(base().weights(&[1.0, 1.0]).build(), Err(Error::Config(_))));
    // A source missing a stream, or with another dtype.
    let mut b = Loader::builder().batch_size(16).weights(&[1.0, 1.0]).source(srcs[0].clone());
    b = b.source(vec![srcs[1][0].clone()]);
    assert!(b.build().unwrap_err().to_string().contains("source 1"));
    let swapped =
        vec![("id".to_string(), srcs[1][1].1.clone()), ("tokens".to_string(), srcs[1][0].1.clone())];
    let b = Loader::builder().batch_size(16).weights(&[1.0, 1.0]).source(srcs[0].clone()).source(swapped);
    assert!(b.build().unwrap_err().to_string().contains("source 1 stream \"id\""));
    let no_weights = Loader::builder().batch_size(16).source(srcs[0].clone());
    assert!(matches!(no_weights.build(), Err(Error::Config(_))));
}
