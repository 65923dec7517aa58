//! Token-block attention between units with the real encoder: shape, range, and the sliding window.

use arbor_models::{DefaultBackend, EncoderConfig, SentenceEncoder, default_device};

#[test]
fn unit_attention_has_one_block_per_head_and_zero_outside_shared_windows() {
    let encoder = SentenceEncoder::<DefaultBackend>::load(&EncoderConfig::default(), &default_device()).unwrap();
    let units = [
        "The Rhine flows through six countries.",
        "It rises in the Swiss Alps.",
        "Its mouth is in the Netherlands.",
        "Prime numbers have exactly two divisors.",
        "Two is the only even prime.",
    ];
    // A 24-token window holds about two of these units, so units 0 and 4 never meet.
    let a = encoder.unit_attention(&units, 24, 4);
    let (l, h, n) = (encoder.config.num_hidden_layers, encoder.config.num_attention_heads, units.len());
    assert_eq!((a.layers, a.heads, a.n, a.values.len()), (l, h, n, l * h * n * n));
    assert!(a.values.iter().all(|v| (0.0..=1.0).contains(v)));
    let at = |layer: usize, head: usize, i: usize, j: usize| a.values[((layer * h + head) * n + i) * n + j];
    assert!((0..l).all(|layer| (0..h).all(|head| at(layer, head, 0, 4) == 0.0)));
    assert!((0..h).any(|head| at(0, head, 0, 1) > 0.0), "neighbours share a window");
    // One big window sees every pair.
    let whole = encoder.unit_attention(&units, 256, 4);
    assert!((0..h).any(|head| whole.values[(head * n) * n + 4] > 0.0));
}
