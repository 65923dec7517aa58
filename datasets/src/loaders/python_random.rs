//! The first draw of Python's `random` after `random.seed(text)`, bit for bit: what LegalBench-RAG's
//! released benchmark script sorts its tests by to choose its 194-question sample of each dataset
//! (`random.seed(test.snippets[0].file_path); random.random()`).
//!
//! Python (3.2 onwards, `version=2`) seeds a str by the integer whose big-endian bytes are the text's UTF-8
//! followed by its SHA-512 digest; CPython hands that integer's 32-bit words, least significant first, to
//! MT19937's `init_by_array` (Matsumoto & Nishimura 1998), and `random()` is 53 bits from two draws,
//! `(a >> 5, b >> 6)`, over 2^53.

use sha2::{Digest, Sha512};

const N: usize = 624;
const M: usize = 397;

/// MT19937's state.
struct Mt {
    state: [u32; N],
    at: usize,
}

impl Mt {
    /// `init_genrand(seed)`.
    fn new(seed: u32) -> Self {
        let mut state = [0u32; N];
        state[0] = seed;
        for i in 1..N {
            state[i] = 1_812_433_253u32.wrapping_mul(state[i - 1] ^ (state[i - 1] >> 30)).wrapping_add(i as u32);
        }
        Mt { state, at: N }
    }

    /// `init_by_array(key)`.
    fn by_array(key: &[u32]) -> Self {
        let mut mt = Mt::new(19_650_218);
        let s = &mut mt.state;
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..N.max(key.len()) {
            let prev = s[i - 1] ^ (s[i - 1] >> 30);
            s[i] = (s[i] ^ prev.wrapping_mul(1_664_525)).wrapping_add(key[j]).wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                s[0] = s[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            let prev = s[i - 1] ^ (s[i - 1] >> 30);
            s[i] = (s[i] ^ prev.wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                s[0] = s[N - 1];
                i = 1;
            }
        }
        s[0] = 0x8000_0000;
        mt
    }

    /// `genrand_uint32()`.
    fn next(&mut self) -> u32 {
        if self.at >= N {
            let s = &mut self.state;
            for k in 0..N {
                let y = (s[k] & 0x8000_0000) | (s[(k + 1) % N] & 0x7fff_ffff);
                s[k] = s[(k + M) % N] ^ (y >> 1) ^ if y & 1 == 1 { 0x9908_b0df } else { 0 };
            }
            self.at = 0;
        }
        let mut y = self.state[self.at];
        self.at += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }
}

/// `random.seed(text); random.random()` in CPython.
pub fn first_random(text: &str) -> f64 {
    let mut bytes = text.as_bytes().to_vec();
    bytes.extend_from_slice(&Sha512::digest(text.as_bytes()));
    // The integer's bytes, most significant first, without leading zeros; then its 32-bit words, least
    // significant first (CPython's `random_seed`, at least one word).
    let start = bytes.iter().position(|&b| b != 0).unwrap_or(bytes.len());
    let mut little: Vec<u8> = bytes[start..].iter().rev().copied().collect();
    little.resize(little.len().div_ceil(4).max(1) * 4, 0);
    let key: Vec<u32> = little.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let mut mt = Mt::by_array(&key);
    let (a, b) = (mt.next() >> 5, mt.next() >> 6);
    (f64::from(a) * 67_108_864.0 + f64::from(b)) / 9_007_199_254_740_992.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against CPython 3 (`import random; random.seed(s); print(repr(random.random()))`).
    #[test]
    fn the_first_draw_is_pythons() {
        for (text, want) in PYTHON {
            assert_eq!(first_random(text), *want, "{text:?}");
        }
    }

    /// MT19937's reference output for `init_by_array({0x123, 0x234, 0x345, 0x456})` (mt19937ar.out).
    #[test]
    fn the_generator_is_the_reference_mt19937() {
        let mut mt = Mt::by_array(&[0x123, 0x234, 0x345, 0x456]);
        let first: Vec<u32> = (0..5).map(|_| mt.next()).collect();
        assert_eq!(first, [1_067_595_299, 955_945_823, 477_289_528, 4_107_218_783, 4_228_976_476]);
    }

    /// `random.seed(text); random.random()` printed by CPython for each text.
    const PYTHON: &[(&str, f64)] = &[
        ("", 0.9602256525641875),
        ("a", 0.2720295377534757),
        ("maud/Cubic Corporation_Investment Group.pdf||Cubic_Corporation_Investment_Group_Amendment No.1.txt", 0.9349123152296013),
        ("privacy_qa/TickTick: To Do List with Reminder, Day Planner.txt", 0.19735189568549294),
        ("contractnli/Data Use Agreement New York City.txt", 0.8065520939635752),
        ("é ünïcode ✓", 0.33892902798482993),
    ];
}
