//! MPNet (Song et al., 2020, "MPNet: Masked and Permuted Pre-training for Language Understanding";
//! `transformers` modeling_mpnet.py): no token types, RoBERTa's offset positions, and T5's relative
//! position bias (Raffel et al., 2020, Section 2.1) added to every block's attention scores,
//!
//! `S[h, i, j] = q_i · k_j / sqrt(d) + b[bucket(j - i), h]`,
//!
//! one table `b` of `[buckets, heads]` (`encoder.relative_attention_bias`) shared by every block. A
//! distance's bucket ([`bucket`]) is the distance itself below 8 tokens, logarithmic from 8 to 128, the last
//! bucket beyond; keys after the query use the upper half of the buckets. sentence-transformers'
//! all-mpnet-base-v2 is an MPNet checkpoint.

use super::Checkpoint;

/// MPNetModel's names (`mpnet.` before each in a task model's checkpoint).
pub const CHECKPOINT: Checkpoint = Checkpoint {
    prefixes: &["mpnet."],
    token_types: false,
    layer: [
        "attention.attn.q",
        "attention.attn.k",
        "attention.attn.v",
        "attention.attn.o",
        "attention.LayerNorm",
        "intermediate.dense",
        "output.dense",
        "output.LayerNorm",
    ],
    relative_attention_bias: Some("encoder.relative_attention_bias"),
};

/// The distance from which buckets are shared (`max_distance` of `relative_position_bucket`).
pub const MAX_DISTANCE: usize = 128;

/// The buckets the distances are put in: 32 whatever config.json's `relative_attention_num_buckets` says,
/// as `MPNetEncoder.compute_position_bias` calls `relative_position_bucket` with its default (the table
/// must have at least these rows: [`crate::bert::BertConfig::check`]).
pub const BUCKETS: usize = 32;

/// MPNet's padding index, fixed in `MPNetEmbeddings` whatever config.json's `pad_token_id` says.
pub const PADDING_IDX: usize = 1;

/// The bucket of a key `relative` positions after its query (`j - i`), of `buckets` in all, as
/// `MPNetEncoder.relative_position_bucket` computes it, in float32 as PyTorch does (the logarithm's
/// quotient truncated toward zero): half the buckets for keys at or before the query, half for keys after;
/// within a half, distances below a quarter of the buckets exactly, then logarithmically up to
/// [`MAX_DISTANCE`], then the half's last bucket.
pub fn bucket(relative: i64, buckets: usize) -> usize {
    let half = buckets / 2;
    let n = -relative;
    let side = if n < 0 { half } else { 0 };
    let n = n.unsigned_abs() as usize;
    let exact = half / 2;
    if n < exact {
        return side + n;
    }
    let ratio = (n as f32 / exact as f32).ln() / (MAX_DISTANCE as f32 / exact as f32).ln();
    let large = exact + (ratio * (half - exact) as f32) as usize;
    side + large.min(half - 1)
}

/// Every distance's bucket ([`BUCKETS`] of them) from `-(len - 1)` to `len - 1`, index `relative + len - 1`.
pub fn buckets_by_distance(len: usize) -> Vec<usize> {
    let len = len.max(1) as i64;
    (-(len - 1)..len).map(|d| bucket(d, BUCKETS)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_exact_near_logarithmic_far_and_split_by_side() {
        // Keys at or before the query (j <= i) use buckets 0..16, keys after 16..32.
        assert_eq!(bucket(0, 32), 0);
        assert_eq!(bucket(-1, 32), 1);
        assert_eq!(bucket(-7, 32), 7);
        assert_eq!(bucket(1, 32), 17);
        assert_eq!(bucket(7, 32), 23);
        // From 8: 8 + floor(ln(n / 8) / ln(16) * 8); 16 tokens away is two octaves of four buckets' width.
        assert_eq!(bucket(-8, 32), 8);
        assert_eq!(bucket(-11, 32), 8); // ln(11/8)/ln(16)*8 = 0.92 -> 8 + 0
        assert_eq!(bucket(-12, 32), 9); // 1.17
        assert_eq!(bucket(-100, 32), 15); // 7.28
        assert_eq!(bucket(-127, 32), 15);
        assert_eq!(bucket(-5000, 32), 15);
        assert_eq!(bucket(5000, 32), 31);
        // The table for a length covers both sides, the query's own position in the middle.
        let table = buckets_by_distance(3);
        assert_eq!(table, vec![2, 1, 0, 17, 18]);
    }
}
