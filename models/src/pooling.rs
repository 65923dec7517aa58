//! How an encoder's token states become one vector, and what is read before a text: sentence-transformers'
//! `Pooling` and `Normalize` modules and its prompts, as encoder settings (issue 43).
//!
//! - [`Pooling::Mean`]: the mean of the real tokens' last hidden states (Sentence-BERT, Reimers & Gurevych
//!   2019, Section 3; all-MiniLM-L6-v2's and arbor's default).
//! - [`Pooling::Cls`]: the first token's state (`[CLS]`; BERT's sentence representation, as bge and
//!   others pool).
//! - [`Pooling::LastToken`]: the last real token's state (decoder embedders).
//!
//! Each is L2-normalised after. [`Prompts`]: the text sentence-transformers puts before a query
//! (`encode_query`, its prompt named "query") or a passage (`encode_document`, "document", else "passage",
//! else "corpus"), prepended to the text before it is tokenized, and read by the pooling
//! (`include_prompt: true`, the default; arbor refuses `false` where it would change the vector).

use burn::tensor::backend::Backend;
use burn::tensor::{Bool, Int, Tensor};
use serde::{Deserialize, Serialize};

/// How token states become one vector (see the module doc).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Pooling {
    #[default]
    Mean,
    Cls,
    LastToken,
}

/// What a text is, for its prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Query,
    Passage,
}

/// The text put before a query and before a passage; empty for none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Prompts {
    pub query: String,
    pub passage: String,
}

impl Prompts {
    /// The prompt of `role`.
    pub fn of(&self, role: Role) -> &str {
        match role {
            Role::Query => &self.query,
            Role::Passage => &self.passage,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.query.is_empty() && self.passage.is_empty()
    }
}

impl Pooling {
    /// sentence-transformers' name of the mode (`pooling_mode` in its Pooling config).
    pub fn name(self) -> &'static str {
        match self {
            Pooling::Mean => "mean",
            Pooling::Cls => "cls",
            Pooling::LastToken => "lasttoken",
        }
    }

    /// The mode a sentence-transformers Pooling config names, in either of its spellings (`"cls"` or the
    /// older `pooling_mode_cls_token: true`); `None` for a mode arbor does not compute (max, weighted mean, ...).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "mean" | "mean_tokens" => Some(Pooling::Mean),
            "cls" | "cls_token" => Some(Pooling::Cls),
            "lasttoken" => Some(Pooling::LastToken),
            _ => None,
        }
    }

    /// One sequence's vector from its token states `states` (`[tokens, hidden]` row-major, real tokens
    /// only), written L2-normalised into `out` (`hidden` long).
    pub fn pool_row(self, states: &[f32], out: &mut [f32]) {
        let h = out.len();
        let n = states.len() / h.max(1);
        out.fill(0.0);
        match self {
            Pooling::Mean => {
                for token in states.chunks_exact(h) {
                    out.iter_mut().zip(token).for_each(|(o, v)| *o += v);
                }
                let count = n.max(1) as f32;
                out.iter_mut().for_each(|v| *v /= count);
            }
            Pooling::Cls if n > 0 => out.copy_from_slice(&states[..h]),
            Pooling::LastToken if n > 0 => out.copy_from_slice(&states[(n - 1) * h..]),
            _ => {}
        }
        let norm = out.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
        out.iter_mut().for_each(|v| *v /= norm);
    }

    /// The pooled, L2-normalised vectors of a padded batch, with gradients.
    ///
    /// # Shapes
    /// - `hidden`: `[batch, tokens, hidden]`, `mask`: `[batch, tokens]` (real tokens first); returns `[batch, hidden]`
    pub fn pool<B: Backend>(self, hidden: Tensor<B, 3>, mask: Tensor<B, 2, Bool>) -> Tensor<B, 2> {
        let [batch, tokens, _] = hidden.dims();
        let pooled = match self {
            Pooling::Cls => hidden.narrow(1, 0, 1.min(tokens)).sum_dim(1).squeeze_dim::<2>(1),
            Pooling::Mean | Pooling::LastToken => {
                let weights = match self {
                    Pooling::LastToken => {
                        let last = mask.clone().int().sum_dim(1).sub_scalar(1).repeat_dim(1, tokens); // [batch, tokens]
                        let at = Tensor::<B, 1, Int>::arange(0..tokens as i64, &mask.device()).unsqueeze_dim::<2>(0).repeat_dim(0, batch);
                        at.equal(last).float()
                    }
                    _ => mask.float(),
                }
                .unsqueeze_dim::<3>(2); // [batch, tokens, 1]
                let summed = (hidden * weights.clone()).sum_dim(1).squeeze_dim::<2>(1); // [batch, hidden]
                summed / weights.sum_dim(1).squeeze_dim::<2>(1).clamp_min(1e-9)
            }
        };
        let norm = pooled.clone().powi_scalar(2).sum_dim(1).sqrt().clamp_min(1e-12); // [batch, 1]
        pooled / norm
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DefaultBackend;
    use burn::tensor::TensorData;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    /// Two sequences, of 3 and 2 tokens, hidden 2: hand-checked vectors for every mode, by the row
    /// pooling (no padding) and by the tensor pooling (the second row padded).
    #[test]
    fn each_mode_hand_checked_by_rows_and_by_tensors() {
        let a = [1.0, 0.0, 3.0, 4.0, 2.0, 2.0]; // tokens (1,0), (3,4), (2,2)
        let b = [0.0, 2.0, 6.0, 8.0]; // tokens (0,2), (6,8)
        let want = [
            (Pooling::Mean, unit(&[2.0, 2.0]), unit(&[3.0, 5.0])),
            (Pooling::Cls, vec![1.0, 0.0], vec![0.0, 1.0]),
            (Pooling::LastToken, unit(&[2.0, 2.0]), vec![0.6, 0.8]),
        ];
        let device = Default::default();
        let padded: Vec<f32> = a.iter().chain(&b).chain(&[9.0, 9.0]).copied().collect();
        let hidden = Tensor::<DefaultBackend, 3>::from_data(TensorData::new(padded, [2, 3, 2]), &device);
        let mask = Tensor::<DefaultBackend, 2, Bool>::from_data(TensorData::new(vec![true, true, true, true, true, false], [2, 3]), &device);
        for (mode, wa, wb) in want {
            let mut out = [0.0; 2];
            mode.pool_row(&a, &mut out);
            assert!(out.iter().zip(&wa).all(|(x, y)| (x - y).abs() < 1e-6), "{mode:?} row a: {out:?}");
            mode.pool_row(&b, &mut out);
            assert!(out.iter().zip(&wb).all(|(x, y)| (x - y).abs() < 1e-6), "{mode:?} row b: {out:?}");
            let got = mode.pool(hidden.clone(), mask.clone()).into_data().to_vec::<f32>().unwrap();
            let expect: Vec<f32> = wa.iter().chain(&wb).copied().collect();
            assert!(got.iter().zip(&expect).all(|(x, y)| (x - y).abs() < 1e-6), "{mode:?} tensors: {got:?}");
        }
    }

    #[test]
    fn names_round_trip_and_unknown_modes_are_none() {
        for mode in [Pooling::Mean, Pooling::Cls, Pooling::LastToken] {
            assert_eq!(Pooling::from_name(mode.name()), Some(mode));
        }
        assert_eq!(Pooling::from_name("cls_token"), Some(Pooling::Cls));
        assert_eq!(Pooling::from_name("max"), None);
        assert_eq!(Pooling::from_name("weightedmean"), None);
    }
}
