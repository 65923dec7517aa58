//! The Chunk Compression Encoder's loss (SmartChunk, Section 4.3): the squared distance between the
//! compressed embedding of a chunk and the encoder's embedding of its summary, averaged over the batch,
//!
//! ```text
//! L_comp = (1/N) sum_c || e_comp(c) - e_gt(c) ||^2
//! ```
//!
//! # Shapes
//! - `compressed`, `target`: `[N, dim]`; returns `[1]`

use burn::tensor::Tensor;
use burn::tensor::backend::Backend;

pub fn compression_mse<B: Backend>(compressed: Tensor<B, 2>, target: Tensor<B, 2>) -> Tensor<B, 1> {
    (compressed - target).powi_scalar(2).sum_dim(1).mean()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_models::DefaultBackend as B;
    use burn::tensor::TensorData;

    #[test]
    fn hand_checked() {
        let t = |v: Vec<f32>| Tensor::<B, 2>::from_data(TensorData::new(v, [2, 2]), &Default::default());
        // Rows: |(1,0) - (0,1)|^2 = 2 and |(0.6,0.8) - (0.6,0.8)|^2 = 0: mean 1.
        let got: f32 = compression_mse(t(vec![1.0, 0.0, 0.6, 0.8]), t(vec![0.0, 1.0, 0.6, 0.8])).into_scalar();
        assert!((got - 1.0).abs() < 1e-6, "{got}");
    }
}
