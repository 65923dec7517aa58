//! The unit tests of `arbor_experiments::methods::exemplars` (src/methods/exemplars.rs).

use arbor_experiments::methods::exemplars::*;

#[test]
fn the_expanded_vector_lies_between_the_query_and_its_exemplars() {
    let q = [1.0, 0.0];
    let got = rocchio(&q, [&[0.0f32, 1.0][..], &[0.0, 1.0][..]].into_iter());
    let h = std::f32::consts::FRAC_1_SQRT_2;
    assert!((got[0] - h).abs() < 1e-6 && (got[1] - h).abs() < 1e-6, "{got:?}");
}
