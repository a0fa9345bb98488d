//! XXH3-64 of stored record bytes, the sidecar's checksum, and the same
//! hash computed while copying, for checked raw gathers.
//!
//! The `xxh3` crate keeps its accumulators in memory between 64-byte stripes
//! (a store-to-load chain per stripe), and a checked gather used to hash a
//! record and then copy it: two passes. Here one AVX2 loop folds each stripe
//! into accumulators held in registers and, when copying, stores the stripe
//! it has loaded. Results equal `xxh3::hash64_with_seed(bytes, 0)` for every
//! input (tested against the crate); inputs of 240 bytes or less, and CPUs
//! without AVX2, use the crate (and a plain copy).
//!
//! The algorithm is XXH3's long-input path with the default secret and seed
//! 0, as specified by <https://github.com/Cyan4973/xxHash> (doc/xxhash_spec.md).

/// XXH3-64 (seed 0) of `bytes`.
#[inline]
pub fn hash64(bytes: &[u8]) -> u64 {
    cfg_if::cfg_if! {
        if #[cfg(target_arch = "x86_64")] {
            if let Some(hash) = avx2::hash(bytes, None) {
                return hash;
            }
        }
    }
    xxh3::hash64_with_seed(bytes, 0)
}

/// Copy the last `dst.len()` bytes of `src` into `dst` (all of it, or a
/// Ragged record's payload after its shape prefix) and return XXH3-64
/// (seed 0) of all of `src`, in one pass.
///
/// `ahead` is what the caller reads next (the next record of a gather): the
/// pass asks for its cache lines one per stripe, so they arrive while this
/// record is hashed. Asked for all at once before the pass, they would stall
/// it whenever the memory queue is full. Empty for none; a hint only.
///
/// # Panics
/// When `dst` is longer than `src` (a caller's bug: gathers size `dst`
/// from the checked location).
#[inline]
pub fn copy_and_hash64(src: &[u8], dst: &mut [u8], ahead: &[u8]) -> u64 {
    assert!(dst.len() <= src.len(), "copy_and_hash64: dst is longer than src");
    cfg_if::cfg_if! {
        if #[cfg(target_arch = "x86_64")] {
            if let Some(hash) = avx2::hash(src, Some((&mut *dst, ahead))) {
                return hash;
            }
        }
    }
    let _ = ahead;
    dst.copy_from_slice(&src[src.len() - dst.len()..]);
    xxh3::hash64_with_seed(src, 0)
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2 {
    use std::arch::x86_64::*;

    const STRIPE: usize = 64;
    /// Stripes per block with the 192-byte default secret: (192 - 64) / 8.
    const STRIPES_PER_BLOCK: usize = 16;
    const BLOCK: usize = STRIPE * STRIPES_PER_BLOCK;
    const PRIME32_1: u64 = 0x9E37_79B1;
    const PRIME64_1: u64 = 0x9E37_79B1_85EB_CA87;
    const INIT: [u64; 8] = [
        0xC2B2_AE3D,
        PRIME64_1,
        0xC2B2_AE3D_27D4_EB4F,
        0x1656_67B1_9E37_79F9,
        0x85EB_CA77_C2B2_AE63,
        0x85EB_CA77,
        0x27D4_EB2F_1656_67C5,
        PRIME32_1,
    ];
    const SECRET: [u8; 192] = [
        0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c, 0xde,
        0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f, 0xcb, 0x79,
        0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21, 0xb8, 0x08, 0x46,
        0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c, 0x3c, 0x28, 0x52, 0xbb,
        0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3, 0x71, 0x64, 0x48, 0x97, 0xa2,
        0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8, 0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c,
        0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d, 0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59,
        0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64, 0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3,
        0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb, 0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3,
        0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e, 0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8,
        0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce, 0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb,
        0xca, 0xbb, 0x4b, 0x40, 0x7e,
    ];

    /// Longest input XXH3 hashes without the stripe loop.
    const MID_MAX: usize = 240;

    /// The stripe loop for inputs longer than `MID_MAX` bytes on a CPU
    /// with AVX2, copying the tail of `src` to `dst` when given (when that
    /// tail is at least two stripes); `None` (nothing done) otherwise.
    pub(super) fn hash(src: &[u8], copy: Option<(&mut [u8], &[u8])>) -> Option<u64> {
        if src.len() <= MID_MAX || !std::arch::is_x86_feature_detected!("avx2") {
            return None;
        }
        // SAFETY: AVX2 is present; every pointer in `long` stays inside
        // `src` (over 240 bytes), `SECRET`, or `dst` (stores of stripes at
        // `at >= skip` go to `at - skip`, and `src.len() - skip == dst.len()`).
        Some(unsafe {
            match copy {
                Some((dst, ahead)) => {
                    let skip = src.len() - dst.len();
                    if dst.len() < 2 * STRIPE {
                        return None;
                    }
                    // The bytes before the first stripe the loop stores.
                    let first = skip.next_multiple_of(STRIPE);
                    dst[..first - skip].copy_from_slice(&src[skip..first]);
                    long::<true>(src, dst, skip, ahead)
                }
                None => long::<false>(src, &mut [], 0, &[]),
            }
        })
    }

    /// One 64-byte stripe at `at`: folded into `acc` with the secret at
    /// `key`, stored to `dst` at `at - skip` when copying and `at >= skip`;
    /// the line of `ahead` at the same offset is asked for.
    macro_rules! stripe {
        ($copy:ident, $acc:ident, $src:ident, $dst:ident, $skip:ident, $ahead:ident, $at:expr, $key:expr) => {{
            let (at, key) = ($at, $key);
            for half in 0..2 {
                let mut x = _mm256_loadu_si256($src.as_ptr().add(at + 32 * half).cast());
                if $copy && at >= $skip {
                    // Opaque to LLVM, which would otherwise see a copy loop,
                    // call memcpy for it and load every byte twice.
                    std::arch::asm!("/* {0} */", inout(ymm_reg) x, options(pure, nomem, nostack, preserves_flags));
                    _mm256_storeu_si256($dst.as_mut_ptr().add(at - $skip + 32 * half).cast(), x);
                }
                let k = _mm256_loadu_si256(SECRET.as_ptr().add(key + 32 * half).cast());
                let z = _mm256_xor_si256(x, k);
                let product = _mm256_mul_epu32(z, _mm256_shuffle_epi32::<0b0011_0001>(z));
                let swapped = _mm256_shuffle_epi32::<0b0100_1110>(x);
                $acc[half] = _mm256_add_epi64($acc[half], _mm256_add_epi64(swapped, product));
            }
            if let Some(line) = $ahead.get(at) {
                _mm_prefetch::<_MM_HINT_T0>((line as *const u8).cast());
            }
        }};
    }

    #[target_feature(enable = "avx2")]
    unsafe fn long<const COPY: bool>(src: &[u8], dst: &mut [u8], skip: usize, ahead: &[u8]) -> u64 {
        let n = src.len();
        let mut acc =
            [_mm256_loadu_si256(INIT.as_ptr().cast()), _mm256_loadu_si256(INIT.as_ptr().add(4).cast())];
        let blocks = (n - 1) / BLOCK;
        for b in 0..blocks {
            for s in 0..STRIPES_PER_BLOCK {
                stripe!(COPY, acc, src, dst, skip, ahead, b * BLOCK + s * STRIPE, s * 8);
            }
            // Scramble with the secret's last 64 bytes.
            let prime = _mm256_set1_epi32(PRIME32_1 as i32);
            for (half, acc) in acc.iter_mut().enumerate() {
                let a = *acc;
                let a = _mm256_xor_si256(a, _mm256_srli_epi64::<47>(a));
                let k = _mm256_loadu_si256(SECRET.as_ptr().add(SECRET.len() - STRIPE + 32 * half).cast());
                let c = _mm256_xor_si256(a, k);
                let low = _mm256_mul_epu32(c, prime);
                let high =
                    _mm256_slli_epi64::<32>(_mm256_mul_epu32(_mm256_shuffle_epi32::<0b0011_0001>(c), prime));
                *acc = _mm256_add_epi64(low, high);
            }
        }
        // The trailing stripes of the last block, then the input's last 64
        // bytes (overlapping what came before; their copy is the same bytes).
        for s in 0..((n - 1) - blocks * BLOCK) / STRIPE {
            stripe!(COPY, acc, src, dst, skip, ahead, blocks * BLOCK + s * STRIPE, s * 8);
        }
        stripe!(COPY, acc, src, dst, skip, ahead, n - STRIPE, SECRET.len() - STRIPE - 7);
        // What of `ahead` lies past this record's length.
        for line in ahead.get(n..).unwrap_or_default().chunks(STRIPE) {
            _mm_prefetch::<_MM_HINT_T0>(line.as_ptr().cast());
        }
        let mut lanes = [0u64; 8];
        _mm256_storeu_si256(lanes.as_mut_ptr().cast(), acc[0]);
        _mm256_storeu_si256(lanes.as_mut_ptr().add(4).cast(), acc[1]);
        merge(&lanes, (n as u64).wrapping_mul(PRIME64_1))
    }

    fn merge(acc: &[u64; 8], start: u64) -> u64 {
        let secret = |at: usize| u64::from_le_bytes(SECRET[at..at + 8].try_into().expect("8 bytes"));
        let mut h = start;
        for i in 0..4 {
            let product = u128::from(acc[2 * i] ^ secret(11 + 16 * i))
                * u128::from(acc[2 * i + 1] ^ secret(19 + 16 * i));
            h = h.wrapping_add((product as u64) ^ ((product >> 64) as u64));
        }
        h ^= h >> 37;
        h = h.wrapping_mul(0x1656_6791_9E37_79F9);
        h ^ (h >> 32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length from 0 to a few blocks, at several alignments, equals
    /// the `xxh3` crate, and the copy is exact.
    #[test]
    fn equals_the_crate_and_copies() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let bytes: Vec<u8> = (0..5000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        for start in [0, 1, 7, 33] {
            for len in 0..=(bytes.len() - start).min(4200) {
                let src = &bytes[start..start + len];
                let want = xxh3::hash64_with_seed(src, 0);
                assert_eq!(hash64(src), want, "hash64: len {len} start {start}");
                for skip in [0, 1, 16, 63, 64, 65, 200].into_iter().filter(|&k| k <= len) {
                    let mut dst = vec![0u8; len - skip + 3];
                    let got = copy_and_hash64(src, &mut dst[3..], &bytes[..len]);
                    assert_eq!(got, want, "copy: len {len} start {start} skip {skip}");
                    assert_eq!(&dst[3..], &src[skip..], "len {len} start {start} skip {skip}");
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "dst is longer than src")]
    fn refuses_a_longer_destination() {
        copy_and_hash64(&[1, 2, 3], &mut [0; 4], &[]);
    }
}
