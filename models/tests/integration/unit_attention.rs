//! Token-block attention between units with the real encoder: shape, range, and the sliding window.

use arbor_models::{DefaultBackend, EncoderConfig, SentenceEncoder, default_device};

#[test]
fn pair_attention_has_one_value_per_head_and_zero_outside_shared_windows() {
    let encoder = SentenceEncoder::<DefaultBackend>::load(&EncoderConfig::default(), &default_device()).unwrap();
    let units = [
        "The Rhine flows through six countries.",
        "It rises in the Swiss Alps.",
        "Its mouth is in the Netherlands.",
        "Prime numbers have exactly two divisors.",
        "Two is the only even prime.",
    ];
    let planes = encoder.config.num_hidden_layers * encoder.config.num_attention_heads;
    // A 24-token window holds about two of these units, so units 0 and 4 never meet.
    let pairs = [(0, 1), (0, 4), (4, 0)];
    let a = encoder.pair_attention(&units, 24, 4, &pairs);
    assert_eq!(a.len(), pairs.len() * planes);
    assert!(a.iter().all(|v| (0.0..=1.0).contains(v)));
    assert!(a[planes..].iter().all(|&v| v == 0.0), "units 0 and 4 share no window");
    assert!(a[..planes].iter().any(|&v| v > 0.0), "neighbours share a window");
    // One big window sees every pair, and the value is symmetric.
    let whole = encoder.pair_attention(&units, 256, 4, &pairs);
    assert!(whole[planes..2 * planes].iter().any(|&v| v > 0.0));
    assert_eq!(whole[planes..2 * planes], whole[2 * planes..]);
}
