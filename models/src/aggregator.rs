//! SproutRAG's learned attention aggregation (Section 2.2):
//!
//! ```text
//! w_{l,h} = softmax(alpha)_{l,h}            alpha in R^{L x H}, softmax over all (layer, head) pairs
//! M       = sum_{l,h} w_{l,h} A^{(l,h)}     A^{(l,h)} in R^{n x n}: attention between the units of a document
//! M       = (M + M^T) / 2, diagonal set to 0
//! ```
//!
//! Uniform weights (alpha = 0) average every head, which the paper says carries proximity bias; training
//! moves the weight toward heads whose attention follows document structure.

use burn::module::{Module, Param};
use burn::tensor::activation::softmax;
use burn::tensor::backend::Backend;
use burn::tensor::{Bool, Distribution, Tensor};
use serde::{Deserialize, Serialize};

/// How `alpha` starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum AggregationInit {
    /// alpha = 0: every (layer, head) weighs 1 / (L H) (the reference implementation's default).
    #[default]
    Uniform,
    /// alpha ~ N(0, 1).
    Normal,
    /// All weight on the last layer's heads (alpha = 0 there, -10 elsewhere), a common heuristic.
    LastLayer,
}

/// The learnable `alpha` over (layer, head).
#[derive(Module, Debug)]
pub struct HeadAggregator<B: Backend> {
    pub alpha: Param<Tensor<B, 2>>,
}

impl<B: Backend> HeadAggregator<B> {
    pub fn new(layers: usize, heads: usize, init: AggregationInit, device: &B::Device) -> Self {
        let alpha = match init {
            AggregationInit::Uniform => Tensor::zeros([layers, heads], device),
            AggregationInit::Normal => crate::host::host_random([layers, heads], Distribution::Normal(0.0, 1.0), device),
            AggregationInit::LastLayer => {
                let last = Tensor::<B, 1, Bool>::from_data(
                    burn::tensor::TensorData::new((0..layers * heads).map(|i| i / heads == layers - 1).collect(), [layers * heads]),
                    device,
                );
                Tensor::<B, 1>::full([layers * heads], -10.0, device).mask_fill(last, 0.0).reshape([layers, heads])
            }
        };
        HeadAggregator { alpha: Param::from_tensor(alpha) }
    }

    /// `w = softmax(alpha)` over all (layer, head) pairs, shape `[layers, heads]`.
    pub fn head_weights(&self) -> Tensor<B, 2> {
        let [l, h] = self.alpha.dims();
        softmax(self.alpha.val().reshape([l * h]), 0).reshape([l, h])
    }

    /// Aggregates per-head attention into the symmetric unit matrix M.
    ///
    /// # Shapes
    /// - `attention`: `[layers, heads, n, n]`
    /// - returns `[n, n]`, symmetric, zero on the diagonal
    pub fn forward(&self, attention: Tensor<B, 4>) -> Tensor<B, 2> {
        let [l, h, n, _] = attention.dims();
        let w = self.head_weights().reshape([l, h, 1, 1]);
        let m = (attention * w).sum_dim(0).sum_dim(1).reshape([n, n]); // [n, n]
        let m = (m.clone() + m.transpose()) / 2.0;
        let off_diagonal = Tensor::<B, 2, Bool>::diag_mask([n, n], 0, &m.device());
        m.mask_fill(off_diagonal.bool_not(), 0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DefaultBackend as B;
    use burn::tensor::TensorData;

    fn values(t: Tensor<B, 2>) -> Vec<f32> {
        t.into_data().to_vec::<f32>().unwrap()
    }

    #[test]
    fn uniform_weights_average_heads_then_symmetrise_and_mask_the_diagonal() {
        let device = Default::default();
        // Two layers, one head, n = 2.
        let a = Tensor::<B, 4>::from_data(TensorData::new(vec![0.5, 0.5, 0.2, 0.8, 0.9, 0.1, 0.6, 0.4], [2, 1, 2, 2]), &device);
        let agg = HeadAggregator::<B>::new(2, 1, AggregationInit::Uniform, &device);
        assert_eq!(values(agg.head_weights()), vec![0.5, 0.5]);
        // Mean: [[0.7, 0.3], [0.4, 0.6]]; symmetrised off-diagonal: (0.3 + 0.4) / 2.
        let m = values(agg.forward(a));
        assert_eq!(m[0], 0.0);
        assert_eq!(m[3], 0.0);
        assert!((m[1] - 0.35).abs() < 1e-6 && (m[2] - 0.35).abs() < 1e-6, "{m:?}");
    }

    #[test]
    fn last_layer_init_puts_the_weight_on_the_last_layer() {
        let agg = HeadAggregator::<B>::new(3, 2, AggregationInit::LastLayer, &Default::default());
        let w = values(agg.head_weights());
        assert!(w[4] > 0.49 && w[5] > 0.49 && w[..4].iter().all(|&x| x < 1e-4), "{w:?}");
        let normal = values(HeadAggregator::<B>::new(3, 2, AggregationInit::Normal, &Default::default()).head_weights());
        assert!((normal.iter().sum::<f32>() - 1.0).abs() < 1e-5);
    }
}
