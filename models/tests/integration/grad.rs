//! The hand-written backward pass of the fine-tuning step (`bert::autodiff`, `bert::tape`) against Burn's
//! own autodiff through the module (issue 44: the gradients must stay what they were). On the real
//! encoder, a loss `Σ pooled ⊙ R` with a fixed random `R`: the pooled vectors and every parameter's
//! gradient of the two paths agree, for each pooling, with and without frozen lower blocks, over sequences
//! of different lengths (the Burn path pads them, the hand-written one packs them). The hand-written GELU
//! derivative is the exact one, Burn's the tanh approximation's: the tolerance below says how far apart
//! that puts them.

use arbor_models::bert::autodiff;
use arbor_models::bert::{Bert, FrozenLayers};
use arbor_models::encoder::pool_ids;
use arbor_models::pooling::Pooling;
use arbor_models::{DefaultBackend, EncoderConfig, SentenceEncoder};
use burn::backend::Autodiff;
use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Tensor, TensorData};

pub(crate) type A = Autodiff<DefaultBackend>;

/// Every float parameter's gradient (empty where it has none), in the module's order.
struct Collect<'g> {
    grads: &'g <A as AutodiffBackend>::Gradients,
    out: Vec<Vec<f32>>,
}

impl ModuleVisitor<A> for Collect<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<A, D>>) {
        let g = param.val().grad(self.grads).map(|g| g.into_data().to_vec::<f32>().unwrap()).unwrap_or_default();
        self.out.push(g);
    }
}

pub(crate) fn gradients(bert: &Bert<A>, pooled: Tensor<A, 2>, weights: &Tensor<A, 2>) -> (Vec<f32>, Vec<Vec<f32>>) {
    let values = pooled.clone().into_data().to_vec::<f32>().unwrap();
    let grads = (pooled * weights.clone()).sum().backward();
    let mut collect = Collect { grads: &grads, out: Vec::new() };
    bert.visit(&mut collect);
    (values, collect.out)
}

fn worst(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

#[test]
fn the_hand_written_backward_pass_gives_burns_gradients() {
    let device = Default::default();
    let encoder = SentenceEncoder::<A>::load(&EncoderConfig::default(), &device).unwrap();
    let texts = [
        "The tenant pays the rent on the first day of each month, by bank transfer to the landlord's account.",
        "Notice in writing.",
        "No pets are allowed in the premises without the prior written consent of the landlord.",
    ];
    let ids = encoder.tokenize(&texts);
    let rows: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
    let (bert, eps) = (&encoder.bert, encoder.config.layer_norm_eps);
    let hidden = 384;
    // A fixed "random" weighting of the pooled vectors: the loss's gradient reaches every coordinate.
    let r: Vec<f32> = (0..rows.len() * hidden).map(|i| (i * 7919 % 1000) as f32 / 500.0 - 1.0).collect();
    let weights = Tensor::<A, 2>::from_data(TensorData::new(r, [rows.len(), hidden]), &device);
    for (frozen, pooling) in [(None, Pooling::Mean), (Some(2), Pooling::Cls), (Some(5), Pooling::LastToken)] {
        let lower = frozen.map(|k| FrozenLayers::new(bert, eps, k).unwrap());
        let burn = match &lower {
            Some(f) => f.pool(bert, &rows, &device, pooling),
            None => pool_ids(bert, &rows, &device, pooling),
        };
        let hand = autodiff::pool_ids(bert, lower.as_ref(), &rows, eps, pooling).expect("the CPU autodiff backend takes the hand-written path");
        let (burn_values, burn_grads) = gradients(bert, burn, &weights);
        let (hand_values, hand_grads) = gradients(bert, hand, &weights);
        let what = format!("{pooling:?} above {frozen:?} frozen blocks");
        assert!(worst(&burn_values, &hand_values) < 1e-5, "{what}: pooled vectors differ by {}", worst(&burn_values, &hand_values));
        assert_eq!(burn_grads.len(), hand_grads.len());
        // The largest gradient entry on Burn's path: a parameter whose gradient is itself rounding below
        // it (a key's bias) is held to agree to that rounding.
        let largest = burn_grads.iter().flatten().fold(0.0f32, |m, x| m.max(x.abs()));
        let mut trained = 0;
        for (i, (b, h)) in burn_grads.iter().zip(&hand_grads).enumerate() {
            assert_eq!(b.len(), h.len(), "{what}: parameter {i} has a gradient on one path only");
            if b.is_empty() {
                continue;
            }
            trained += 1;
            let off = worst(b, h);
            let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
            let relative = norm(&b.iter().zip(h).map(|(x, y)| x - y).collect::<Vec<_>>()) / norm(b).max(1e-12);
            // Burn's GELU backward differentiates the tanh approximation (burn-backend's `gelu_backward`)
            // while its forward pass is the exact erf GELU; the hand-written pass takes the exact
            // derivative, as PyTorch does. That alone puts the two 1e-4 to 2e-3 apart (relative to the
            // gradient's norm) below the last block; with the tanh derivative in both they agree to
            // 1e-5 to 1.2e-4. A key's bias has no gradient (softmax does not see it): both are rounding,
            // whose size follows the order of the sums (2.0e-5 apart since stop 74, both under 1e-4 of
            // the largest entry).
            let rounding = b.iter().chain(h).fold(0.0f32, |m, x| m.max(x.abs())) <= 1e-4 * largest;
            assert!(
                relative <= 3e-3 || off <= 1e-5 || rounding,
                "{what}: parameter {i}'s gradient off by {relative:.2e} of its norm (largest entry off by {off})"
            );
        }
        // Every parameter of the trainable blocks (16 each), and the embeddings' 5 when nothing is frozen.
        let want = match frozen {
            Some(k) => 16 * (6 - k),
            None => 16 * 6 + 5,
        };
        assert_eq!(trained, want, "{what}");
    }
}

/// The path applies only where it can: another backend gets `None` (its caller runs the Burn module).
#[test]
fn the_hand_written_path_declines_other_backends() {
    let device = Default::default();
    let encoder = SentenceEncoder::<DefaultBackend>::load(&EncoderConfig::default(), &device).unwrap();
    let ids = encoder.tokenize(&["No pets."]);
    let rows: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
    assert!(autodiff::pool_ids(&encoder.bert, None, &rows, encoder.config.layer_norm_eps, Pooling::Mean).is_none());
}

/// The reranker's fine-tuning takes the same path (`CrossEncoder::forward_rows`): the same scores and
/// gradients as its padded Burn forward, none below its trainable blocks.
#[test]
fn the_rerankers_rows_score_and_train_as_its_padded_forward() {
    use arbor_models::encoder::pad_ids;
    use arbor_models::reranker::CrossEncoder;
    let device = Default::default();
    let encoder = SentenceEncoder::<A>::load(&EncoderConfig::default(), &device).unwrap();
    let ids =
        encoder.tokenize(&["Who pays the rent? [SEP] The tenant pays the rent on the first day of each month.", "Who pays the rent? [SEP] No pets."]);
    let rows: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
    let model = CrossEncoder::new(encoder.bert.clone(), 384, &device).freeze_below(2);
    let prior = || Tensor::<A, 1>::from_floats([0.3, -0.1], &device);
    let (padded, mask) = pad_ids::<A>(&rows, &device);
    let burn = model.forward(padded, mask, prior());
    let hand = model.forward_rows(&rows, prior(), encoder.config.layer_norm_eps);
    let scores = |t: &Tensor<A, 1>| t.clone().into_data().to_vec::<f32>().unwrap();
    assert!(worst(&scores(&burn), &scores(&hand)) < 1e-4, "{:?} vs {:?}", scores(&burn), scores(&hand));
    let (gb, gh) = (burn.sum().backward(), hand.sum().backward());
    let top = &model.bert.layers[5].intermediate.weight;
    let (b, h) = (top.grad(&gb).unwrap().into_data().to_vec::<f32>().unwrap(), top.grad(&gh).unwrap().into_data().to_vec::<f32>().unwrap());
    let scale = b.iter().map(|v| v.abs()).fold(0.0f32, f32::max);
    assert!(worst(&b, &h) <= 3e-3 * scale, "the top block's gradient: off by {} of {scale}", worst(&b, &h));
    let (head_b, head_h) = (
        model.head.weight.grad(&gb).unwrap().into_data().to_vec::<f32>().unwrap(),
        model.head.weight.grad(&gh).unwrap().into_data().to_vec::<f32>().unwrap(),
    );
    assert!(worst(&head_b, &head_h) < 1e-4);
    assert!(model.bert.layers[3].query.weight.grad(&gh).is_none() && model.bert.embeddings.word_embeddings.weight.grad(&gh).is_none());
}
