//! The sampler against loaderx 2.0.1's golden streams, plus its own invariants.

use std::collections::BTreeSet;

use proptest::prelude::*;
use zrecord::training::sampler::{Mode, Permutation, Sampler, Sfc64};
use zrecord::Error;

const MAX: u64 = u64::MAX;

fn golden() -> serde_json::Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/zsampler-golden.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).expect("golden JSON parses")
}

fn batches(s: &mut Sampler, n: usize) -> Vec<Vec<u64>> {
    (0..n).map(|_| s.next_batch()).collect()
}

fn is_config(e: Error) -> bool {
    matches!(e, Error::Config(_))
}

const MODES: [Mode; 3] = [Mode::Sequential, Mode::Iid, Mode::Cyclic];

#[test]
fn golden_streams_match_exactly() {
    let golden = golden();
    let cases = golden["cases"].as_array().expect("cases array");
    assert_eq!(cases.len(), 17, "fixture changed: update this count deliberately");
    for (i, case) in cases.iter().enumerate() {
        let u = |k: &str| case[k].as_u64().unwrap_or_else(|| panic!("case {i}: {k}"));
        let mode = Mode::try_from(u8::try_from(u("mode")).unwrap()).unwrap();
        let mut s = Sampler::new(u("length"), u("batch_size"), mode, u("seed")).unwrap();
        if let Some(step) = case["seek"].as_u64() {
            s.seek(step);
        }
        let expected: Vec<Vec<u64>> = serde_json::from_value(case["batches"].clone()).unwrap();
        assert!(!expected.is_empty());
        for (j, want) in expected.iter().enumerate() {
            assert_eq!(s.batch_len(), want.len() as u64, "case {i} batch {j} length");
            assert_eq!(&s.next_batch(), want, "case {i} ({case:?}) batch {j}");
        }
    }
}

/// `(length, batch_size, mode, seed, seek, expected batches)`.
type EdgeCase = (u64, u64, Mode, u64, Option<u64>, &'static [&'static [u64]]);

/// Streams recorded from loaderx 2.0.1's `libsampler.so` (called directly),
/// at the u64 edges the golden file does not reach.
#[test]
fn loaderx_u64_edges() {
    let cases: &[EdgeCase] = &[
        // Sequential windows wrap `cursor + i` at 2^64 before `mod length`,
        // and the cursor advances by `(cursor + batch) mod length`, wrapping too.
        (MAX, 5, Mode::Sequential, 0, Some(7378697629483820646), &[&[MAX - 1, 0, 0, 1, 2], &[3, 4, 5, 6, 7]]),
        (
            MAX - 2,
            7,
            Mode::Sequential,
            0,
            Some(5270498306774157604),
            &[&[MAX - 3, 0, 1, 2, 0, 1, 2], &[3, 4, 5, 6, 7, 8, 9]],
        ),
        // seek: cursor = (step * batch wrapping) mod length.
        (5, 3, Mode::Sequential, 0, Some(MAX), &[&[3, 4, 0], &[1, 2, 3]]),
        // Feistel over 64 bits (half = 32).
        (
            MAX,
            4,
            Mode::Cyclic,
            1,
            None,
            &[
                &[2583591104942515276, 13743714104391534876, 948035391027845918, 466437580636013429],
                &[10833960247367527024, 8917324363309347167, 8930208118435076652, 12692022978336043452],
            ],
        ),
        (
            MAX,
            4,
            Mode::Cyclic,
            1,
            Some(MAX),
            &[
                &[4403713638716481766, 11341528305459228331, 1470241796271620602, 10756350499938561676],
                &[5689252931077111011, 8630429578455941652, 15806527142007120401, 4540974171833226207],
            ],
        ),
        (
            (1 << 63) + 1,
            3,
            Mode::Cyclic,
            9,
            Some(12345678901234567),
            &[
                &[4388732401839798866, 5333583254794420817, 1760170986169582792],
                &[1784822742099461327, 3162408762336561412, 361308437563156671],
            ],
        ),
        (
            MAX,
            3,
            Mode::Iid,
            MAX,
            Some(1000),
            &[&[3327335891174226705, 6820872589594827639, 12004349966302227095]],
        ),
    ];
    for (i, &(length, batch, mode, seed, seek, want)) in cases.iter().enumerate() {
        let mut s = Sampler::new(length, batch, mode, seed).unwrap();
        if let Some(step) = seek {
            s.seek(step);
        }
        for (j, w) in want.iter().enumerate() {
            assert_eq!(&s.next_batch()[..], *w, "edge case {i} batch {j}");
        }
    }
}

/// loaderx replays `step * batch_size` draws with the product wrapping at 2^64
/// (checked against libsampler.so with these parameters).
#[test]
fn iid_seek_draw_count_wraps_like_loaderx() {
    let batch = 1 << 20;
    let mut fresh = Sampler::new(1000, batch, Mode::Iid, 5).unwrap();
    let mut wrapped = fresh.clone();
    wrapped.seek(1 << 44); // 2^44 * 2^20 = 2^64 draws == 0 draws
    let first = fresh.next_batch();
    assert_eq!(&first[..5], [676, 717, 315, 667, 657]);
    assert_eq!(wrapped.next_batch(), first);
    assert_eq!(wrapped.step(), (1 << 44) + 1);
}

#[test]
fn sfc64_and_below_basics() {
    let mut a = Sfc64::new(42);
    let mut b = Sfc64::new(42);
    assert_eq!(a.next_u64(), b.next_u64());
    assert_ne!(Sfc64::new(1).next_u64(), Sfc64::new(2).next_u64());
    for n in [1, 2, 3, 1000, MAX] {
        for _ in 0..1000 {
            assert!(a.below(n) < n);
        }
    }
}

#[test]
fn permutation_is_a_bijection() {
    for n in [1u64, 2, 3, 4, 5, 7, 10, 15, 16, 17, 63, 64, 65, 100, 255, 1000, 4097, 10_000] {
        for key in [0, 1, 0xDEAD_BEEF, MAX] {
            let p = Permutation::new(key, n);
            assert_eq!(p.n(), n);
            let image: BTreeSet<u64> = (0..n).map(|x| p.apply(x)).collect();
            assert_eq!(image.len() as u64, n, "n={n} key={key}: not injective");
            assert_eq!(image.last(), Some(&(n - 1)), "n={n} key={key}: out of range");
        }
    }
}

#[test]
fn permutation_depends_on_key() {
    let a: Vec<u64> = (0..100).map(|x| Permutation::new(1, 100).apply(x)).collect();
    let b: Vec<u64> = (0..100).map(|x| Permutation::new(2, 100).apply(x)).collect();
    assert_ne!(a, b);
}

#[test]
#[should_panic(expected = "outside")]
fn permutation_rejects_out_of_domain() {
    Permutation::new(0, 10).apply(10);
}

#[test]
fn cyclic_covers_each_index_once_per_cycle() {
    let (length, batch) = (96, 8);
    let mut s = Sampler::new(length, batch, Mode::Cyclic, 77).unwrap();
    let mut cycles = Vec::new();
    for _cycle in 0..4 {
        let mut seen: Vec<u64> = batches(&mut s, 12).concat();
        cycles.push(seen.clone());
        seen.sort_unstable();
        assert_eq!(seen, (0..length).collect::<Vec<_>>());
    }
    assert_ne!(cycles[0], cycles[1], "each cycle draws a fresh permutation");
}

#[test]
fn cyclic_remainder_is_dropped_and_rotates() {
    let (length, batch) = (10u64, 4u64);
    let mut s = Sampler::new(length, batch, Mode::Cyclic, 123).unwrap();
    let mut dropped_sets = BTreeSet::new();
    for _cycle in 0..8 {
        let used: Vec<u64> = batches(&mut s, 2).concat();
        let set: BTreeSet<u64> = used.iter().copied().collect();
        assert_eq!(set.len(), 8, "no repeats within a cycle");
        let dropped: Vec<u64> = (0..length).filter(|i| !set.contains(i)).collect();
        assert_eq!(dropped.len(), 2);
        dropped_sets.insert(dropped);
    }
    assert!(dropped_sets.len() > 1, "the dropped remainder never changed: {dropped_sets:?}");
}

#[test]
fn cyclic_short_batch_when_store_smaller_than_batch() {
    let mut s = Sampler::new(3, 8, Mode::Cyclic, 5).unwrap();
    assert_eq!(s.batch_len(), 3);
    let all = batches(&mut s, 6);
    for b in &all {
        let mut b = b.clone();
        b.sort_unstable();
        assert_eq!(b, [0, 1, 2]);
    }
    assert_eq!(all[0], [0, 1, 2]);
    assert_eq!(all[1], [2, 1, 0]);
    // One step per cycle: seek(k) is cycle k.
    s.seek(1);
    assert_eq!(s.next_batch(), all[1]);
}

#[test]
fn sequential_wraps_around_small_stores() {
    let mut s = Sampler::new(3, 8, Mode::Sequential, 0).unwrap();
    assert_eq!(s.next_batch(), [0, 1, 2, 0, 1, 2, 0, 1]);
    assert_eq!(s.next_batch(), [2, 0, 1, 2, 0, 1, 2, 0]);
}

#[test]
fn shards_partition_every_global_batch() {
    for mode in MODES {
        let (length, batch, world) = (1000, 16, 4);
        let mut global = Sampler::new(length, batch, mode, 9).unwrap();
        let mut shards: Vec<Sampler> = (0..world)
            .map(|r| Sampler::new(length, batch, mode, 9).unwrap().shard(r, world).unwrap())
            .collect();
        for s in &shards {
            assert_eq!(s.batch_len(), 4);
            assert_eq!(s.world(), world);
        }
        for step in 0..200 {
            if step == 150 {
                global.seek(70);
                shards.iter_mut().for_each(|s| s.seek(70));
            }
            let whole = global.next_batch();
            let parts: Vec<u64> = shards.iter_mut().flat_map(|s| s.next_batch()).collect();
            assert_eq!(parts, whole, "{mode} step {step}");
        }
        assert!(shards.iter().all(|s| s.step() == global.step()));
    }
}

#[test]
fn shard_of_short_cyclic_batch() {
    let mut global = Sampler::new(6, 8, Mode::Cyclic, 1).unwrap();
    let mut a = global.clone().shard(0, 2).unwrap();
    let mut b = global.clone().shard(1, 2).unwrap();
    assert_eq!(a.batch_len(), 3);
    for _ in 0..5 {
        let whole = global.next_batch();
        assert_eq!([a.next_batch(), b.next_batch()].concat(), whole);
    }
    // 6 records cannot be split 4 ways even though the batch size can.
    let err = Sampler::new(6, 8, Mode::Cyclic, 1).unwrap().shard(0, 4).unwrap_err();
    assert!(is_config(err));
}

#[test]
fn shard_rejects_bad_rank_and_world() {
    let s = || Sampler::new(100, 12, Mode::Iid, 0).unwrap();
    assert!(is_config(s().shard(0, 0).unwrap_err()));
    assert!(is_config(s().shard(3, 3).unwrap_err()));
    assert!(is_config(s().shard(7, 3).unwrap_err()));
    assert!(is_config(s().shard(0, 5).unwrap_err()), "12 is not a multiple of 5");
    assert!(is_config(s().shard(0, 24).unwrap_err()));
    let ok = s().shard(2, 3).unwrap();
    assert_eq!((ok.rank(), ok.world(), ok.batch_len()), (2, 3, 4));
    // A later shard call replaces the split rather than nesting it.
    let again = ok.shard(0, 12).unwrap();
    assert_eq!((again.rank(), again.world(), again.batch_len()), (0, 12, 1));
}

#[test]
fn seek_k_equals_kth_batch_in_every_mode() {
    for mode in MODES {
        for (length, batch) in [(10, 4), (3, 8), (1000, 32), (7, 7), (1, 1), (2, 5)] {
            let mut fresh = Sampler::new(length, batch, mode, 31).unwrap();
            let stream = batches(&mut fresh, 40);
            let mut s = Sampler::new(length, batch, mode, 31).unwrap();
            for k in [0u64, 1, 2, 3, 5, 13, 39, 7, 0] {
                s.seek(k);
                assert_eq!(s.step(), k);
                assert_eq!(s.next_batch(), stream[k as usize], "{mode} {length}/{batch} k={k}");
                assert_eq!(s.step(), k + 1);
            }
        }
    }
}

#[test]
fn huge_length_does_not_panic() {
    for mode in MODES {
        for batch in [1, 3, 64] {
            let mut s = Sampler::new(MAX, batch, mode, 3).unwrap();
            for b in batches(&mut s, 5) {
                assert_eq!(b.len() as u64, batch);
                assert!(b.iter().all(|&i| i < MAX));
            }
            s.seek(if mode == Mode::Iid { 1000 } else { MAX });
            assert_eq!(s.next_batch().len() as u64, batch);
            assert_eq!(s.step(), if mode == Mode::Iid { 1001 } else { 0 });
        }
    }
    let mut s = Sampler::new(MAX, MAX, Mode::Cyclic, 0).unwrap();
    s.seek(MAX); // usable math must not overflow even when nothing can be drawn
    assert_eq!(s.batch_len(), MAX);
}

#[test]
fn zero_length_or_batch_is_a_config_error() {
    assert!(is_config(Sampler::new(0, 4, Mode::Iid, 0).unwrap_err()));
    assert!(is_config(Sampler::new(4, 0, Mode::Cyclic, 0).unwrap_err()));
    let msg = Sampler::new(0, 4, Mode::Sequential, 0).unwrap_err().to_string();
    assert!(msg.contains("length"), "{msg}");
}

#[test]
fn mode_parses_and_maps_loaderx_codes() {
    for mode in MODES {
        assert_eq!(mode.to_string().parse::<Mode>().unwrap(), mode);
        assert_eq!(Mode::try_from(mode.code()).unwrap(), mode);
    }
    assert_eq!("IID".parse::<Mode>().unwrap(), Mode::Iid);
    assert_eq!(Mode::Cyclic.code(), 2);
    assert!(is_config("shuffle".parse::<Mode>().unwrap_err()));
    assert!(is_config(Mode::try_from(3).unwrap_err()));
}

#[test]
fn fill_next_reuses_the_buffer() {
    let mut s = Sampler::new(1000, 64, Mode::Cyclic, 0).unwrap();
    let mut buf = Vec::new();
    s.fill_next(&mut buf);
    let ptr = buf.as_ptr();
    let first = buf.clone();
    s.fill_next(&mut buf);
    assert_eq!(buf.as_ptr(), ptr);
    assert_eq!(buf.len(), 64);
    assert_ne!(buf, first);
}

#[test]
fn iterator_yields_the_same_stream() {
    let mut a = Sampler::new(50, 5, Mode::Iid, 8).unwrap();
    let b = Sampler::new(50, 5, Mode::Iid, 8).unwrap();
    let via_iter: Vec<Vec<u64>> = b.take(4).collect();
    assert_eq!(via_iter, batches(&mut a, 4));
}

proptest! {
    #[test]
    fn indices_in_range_and_batches_sized(
        length in 1u64..5000,
        batch in 1u64..300,
        mode in 0u8..3,
        seed in any::<u64>(),
        step in 0u64..50,
    ) {
        let mode = Mode::try_from(mode).unwrap();
        let mut s = Sampler::new(length, batch, mode, seed).unwrap();
        s.seek(step);
        for _ in 0..3 {
            let b = s.next_batch();
            prop_assert_eq!(b.len() as u64, s.batch_len());
            prop_assert!(b.iter().all(|&i| i < length));
        }
    }

    #[test]
    fn seek_matches_replay(
        length in 1u64..2000,
        batch in 1u64..64,
        mode in 0u8..3,
        seed in any::<u64>(),
        k in 0usize..30,
    ) {
        let mode = Mode::try_from(mode).unwrap();
        let mut fresh = Sampler::new(length, batch, mode, seed).unwrap();
        let kth = fresh.nth(k).unwrap();
        let mut s = Sampler::new(length, batch, mode, seed).unwrap();
        s.seek(k as u64);
        prop_assert_eq!(s.next_batch(), kth);
    }

    #[test]
    fn shards_concat_to_global(
        length in 1u64..2000,
        per in 1u64..16,
        world in 1u64..6,
        mode in 0u8..3,
        seed in any::<u64>(),
        step in 0u64..40,
    ) {
        let mode = Mode::try_from(mode).unwrap();
        let mut global = Sampler::new(length, per * world, mode, seed).unwrap();
        global.seek(step);
        let shards: Result<Vec<Sampler>, _> = (0..world)
            .map(|r| Sampler::new(length, per * world, mode, seed).unwrap().shard(r, world))
            .collect();
        // Only a short cyclic batch (store < batch) may be unsplittable.
        let Ok(mut shards) = shards else {
            prop_assert!(mode == Mode::Cyclic && length < per * world && length % world != 0);
            return Ok(());
        };
        shards.iter_mut().for_each(|s| s.seek(step));
        for _ in 0..3 {
            let parts: Vec<u64> = shards.iter_mut().flat_map(|s| s.next_batch()).collect();
            prop_assert_eq!(parts, global.next_batch());
        }
    }

    #[test]
    fn permutation_bijective_for_random_n(n in 1u64..3000, key in any::<u64>()) {
        let p = Permutation::new(key, n);
        let mut image: Vec<u64> = (0..n).map(|x| p.apply(x)).collect();
        image.sort_unstable();
        prop_assert_eq!(image, (0..n).collect::<Vec<_>>());
    }

    #[test]
    fn permutation_runs_equal_pointwise(n in 1u64..5000, key in any::<u64>(), a in 0u64..5000, len in 0u64..40) {
        let p = Permutation::new(key, n);
        let start = a % n;
        let len = len.min(n - start);
        let mut run = vec![u64::MAX; len as usize];
        p.apply_run(start, &mut run);
        prop_assert_eq!(run, (start..start + len).map(|x| p.apply(x)).collect::<Vec<_>>());
    }

    #[test]
    fn sequential_near_u64_max_matches_definition(
        back in 0u64..64,
        batch in 1u64..40,
        steps in 0u64..4,
    ) {
        // length = 2^64 - 1 - back; seek so the cursor sits close to the top.
        let length = MAX - back;
        let mut s = Sampler::new(length, batch, Mode::Sequential, 0).unwrap();
        let mut cursor = 0u64;
        for _ in 0..steps {
            s.next_batch();
            cursor = cursor.wrapping_add(batch) % length;
        }
        // For odd batches, also seek so the cursor is the top index and the
        // next window crosses 2^64.
        let step = (length - 1).wrapping_mul(inverse_odd(batch | 1));
        if batch % 2 == 1 {
            s.seek(step);
            cursor = step.wrapping_mul(batch) % length;
        }
        for _ in 0..3 {
            let want: Vec<u64> = (0..batch).map(|i| cursor.wrapping_add(i) % length).collect();
            prop_assert_eq!(s.next_batch(), want);
            cursor = cursor.wrapping_add(batch) % length;
        }
    }
}

/// Multiplicative inverse of an odd number modulo 2^64 (Newton's iteration).
fn inverse_odd(a: u64) -> u64 {
    let mut x = a;
    for _ in 0..6 {
        x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
    }
    x
}
