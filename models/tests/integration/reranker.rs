//! The cross-encoder's two paths agree: the scores Burn's module computes in training (padded batch,
//! autodiff-ready) and those the inference kernel gives the reranking stage.

use arbor_models::encoder::pad_ids;
use arbor_models::reranker::{CrossEncoder, Scorer, pair_ids};
use arbor_models::{DefaultBackend, EncoderConfig, SentenceEncoder, default_device};
use burn::tensor::Tensor;

#[test]
fn training_and_inference_score_every_pair_alike() {
    let device = default_device();
    let encoder = SentenceEncoder::<DefaultBackend>::load(&EncoderConfig::default(), &device).expect("the default encoder loads");
    let model = CrossEncoder::new(encoder.bert.clone(), encoder.dim(), &device);
    let query = "Who may receive the confidential information?";
    let texts = [
        "The Recipient may disclose Confidential Information to its employees who need to know it.",
        "This Agreement is governed by the laws of the State of New York.",
        "Short.",
    ];
    let priors = [0.61f32, 0.12, -0.05];
    let scorer = Scorer::new(&model, &encoder, 64, 256);
    let fast = scorer.score(&encoder, query, &texts, &priors, 2);

    let q = &encoder.word_pieces(&[query])[0];
    let pairs: Vec<Vec<u32>> = encoder.word_pieces(&texts).iter().map(|t| pair_ids(q, t, encoder.special_ids(), 64, 256)).collect();
    let refs: Vec<&[u32]> = pairs.iter().map(Vec::as_slice).collect();
    let (ids, mask) = pad_ids::<DefaultBackend>(&refs, &device);
    let prior = Tensor::<DefaultBackend, 1>::from_floats(priors.as_slice(), &device);
    let burn = model.forward(ids, mask, prior).into_data().to_vec::<f32>().unwrap();
    for (a, b) in fast.iter().zip(&burn) {
        assert!((a - b).abs() < 1e-3, "kernel {fast:?} vs module {burn:?}");
    }
    // The prior enters as gamma x cos, gamma starting at 20.
    let without = scorer.score(&encoder, query, &texts, &[0.0; 3], 2);
    for ((with, without), prior) in fast.iter().zip(&without).zip(&priors) {
        assert!((with - without - 20.0 * prior).abs() < 1e-4, "{with} - {without} vs 20 x {prior}");
    }
}
