//! Where a trainer's pooled vectors come from (SproutRAG's and its dense control's, Section 4's encoder
//! E): the frozen encoder's, computed once before training; or the encoder fine-tuned inside the model,
//! which a step runs with gradients (whole, or its upper blocks only: `training.frozen_layers`,
//! [`FrozenLayers`]) and validation runs through the inference kernel of its current weights (the CPU
//! kernel, padding nothing; what the evaluator will use after training).

use std::cell::RefCell;
use std::collections::HashMap;

use arbor_models::bert::{Bert, FrozenLayers, Precision, autodiff};
use arbor_models::encoder::{Kernel, pool_ids_in};
use arbor_models::pooling::Pooling;
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};

use crate::config::TrainConfig;
use crate::data::{TrainDoc, TrainQuery};

/// The pretrained encoder a trainer fine-tunes (`training.freeze_encoder: false`), with its layer norms'
/// epsilon (the CPU kernel needs it; Burn's `LayerNorm` keeps its own private) and the pooling its
/// vectors take (the encoder's, [`arbor_models::pooling`]).
#[derive(Debug, Clone)]
pub struct FineTune<B: Backend> {
    pub bert: Bert<B>,
    pub layer_norm_eps: f64,
    pub pooling: Pooling,
}

/// How a fine-tuning run computes vectors, fixed before its first step.
#[derive(Debug, Clone)]
pub struct StepEncoder {
    frozen: Option<FrozenLayers>,
    layer_norm_eps: f64,
    pooling: Pooling,
    /// The products' arithmetic in the step (`training.precision`): bf16 autocast runs Burn's module
    /// ([`Precision`]), never the CPU build's float32 kernel.
    precision: Precision,
}

impl StepEncoder {
    /// `frozen_layers`: the blocks (with the embeddings) kept at their pretrained weights, or `None`.
    pub fn new<B: Backend>(tune: &FineTune<B>, frozen_layers: Option<usize>) -> anyhow::Result<Self> {
        let frozen = frozen_layers.map(|k| FrozenLayers::new(&tune.bert, tune.layer_norm_eps, k)).transpose().map_err(anyhow::Error::msg)?;
        Ok(StepEncoder { frozen, layer_norm_eps: tune.layer_norm_eps, pooling: tune.pooling, precision: Precision::F32 })
    }

    /// The step encoder a trainer under `config` runs: its `frozen_layers` and its `precision`, which the
    /// backend `B` must compute in (bf16: the CUDA build; the default CPU build is float32 only).
    pub fn of<B: Backend>(tune: &FineTune<B>, config: &TrainConfig) -> anyhow::Result<Self> {
        let precision = config.precision;
        precision.ensure_supported::<B>(&Default::default()).map_err(|e| anyhow::anyhow!("training.{e}"))?;
        Ok(StepEncoder { precision, ..StepEncoder::new(tune, config.frozen_layers)? })
    }

    /// Pooled (by the encoder's pooling), L2-normalised vectors of token-id rows through `bert`, with
    /// gradients above the frozen blocks (through every block when none is frozen), `[rows, hidden]`.
    /// On the CPU build the encoder's forward and backward passes are the hand-written ones
    /// ([`arbor_models::bert::autodiff`]) and a pass without a graph is the inference kernel's; elsewhere
    /// (and in bf16) Burn's module's.
    pub fn pool<B: Backend>(&self, bert: &Bert<B>, ids: &[&[u32]], device: &B::Device) -> Tensor<B, 2> {
        if self.precision.is_f32()
            && let Some(pooled) = autodiff::pool_ids(bert, self.frozen.as_ref(), ids, self.layer_norm_eps, self.pooling)
        {
            return pooled;
        }
        // No graph (GradCache's first pass, on the inner backend): the CPU build's inference kernel over
        // the current weights, the frozen blocks' included (they keep the pretrained weights `bert` holds).
        if self.precision.is_f32()
            && !B::ad_enabled(device)
            && let Kernel::Cpu(cpu, pooling) = Kernel::new(bert, self.layer_norm_eps, self.pooling)
        {
            let rows = cpu.embed(ids, pooling);
            let hidden = rows.len() / ids.len().max(1);
            return Tensor::from_data(TensorData::new(rows, [ids.len(), hidden]), device);
        }
        match &self.frozen {
            Some(frozen) => frozen.pool_in(bert, ids, device, self.pooling, self.precision),
            None => pool_ids_in(bert, ids, device, self.pooling, self.precision),
        }
    }
}

/// The source of a trainer's pooled (L2-normalised) vectors.
pub enum Vectors<'a, B: Backend> {
    /// The frozen encoder's: `TrainDoc::pooled` and `TrainQuery::pooled`.
    Given,
    /// A training step's: through the model's `bert`, with gradients.
    Step(&'a StepEncoder, &'a Bert<B>),
    /// Validation's: the fine-tuned weights in the inference kernel, no gradient.
    Kernel(Kernel<B>),
    /// A cached step's first run of its loss (GradCache, [`crate::grad_cache`]): each input embedded once,
    /// without a graph, and noted.
    Recording(&'a Recorder<'a, B>),
    /// A cached step's second run: the first run's rows, as leaves the loss's gradient reaches.
    Cached(&'a Recorded<B>),
}

impl<'a, B: Backend> Vectors<'a, B> {
    /// For validation: the model's fine-tuned `bert`, if any, in the inference kernel; else the given vectors.
    pub fn validation(encoder: Option<&StepEncoder>, bert: Option<&Bert<B>>) -> Self {
        match (encoder, bert) {
            (Some(e), Some(bert)) => Vectors::Kernel(Kernel::new(bert, e.layer_norm_eps, e.pooling)),
            _ => Vectors::Given,
        }
    }

    /// For a step: the model's fine-tuned `bert` through `encoder`, if any; else the given vectors.
    pub fn step(encoder: Option<&'a StepEncoder>, bert: Option<&'a Bert<B>>) -> Self {
        match (encoder, bert) {
            (Some(e), Some(bert)) => Vectors::Step(e, bert),
            _ => Vectors::Given,
        }
    }

    /// The vectors of `doc`'s units `kept`, in that order, `[kept, hidden]`.
    pub fn units(&self, doc: &TrainDoc, kept: &[usize], device: &B::Device) -> Tensor<B, 2> {
        let ids = || kept.iter().map(|&u| doc.ids[u].as_slice()).collect();
        self.rows(ids, || kept.iter().map(|&u| doc.pooled[u].as_slice()).collect(), device)
    }

    /// The vectors of units of several documents, `refs` as (document, unit) into `docs`, in that order,
    /// `[refs, hidden]` (a corpus-wide step's candidates: [`crate::negatives`]).
    pub fn units_across(&self, docs: &[TrainDoc], refs: &[(usize, usize)], device: &B::Device) -> Tensor<B, 2> {
        let ids = || refs.iter().map(|&(d, u)| docs[d].ids[u].as_slice()).collect();
        self.rows(ids, || refs.iter().map(|&(d, u)| docs[d].pooled[u].as_slice()).collect(), device)
    }

    /// The vectors of every unit of `doc`: those of `kept` (sorted) as [`Self::units`], the others the
    /// frozen encoder's (`TrainDoc::pooled`, read as data: no gradient). The sampled step of a model that
    /// reads whole documents (SproutRAG's SLLM): the encoder's cost is the window's, the document stays
    /// whole, and with every unit kept it is [`Self::all_units`].
    pub fn units_within(&self, doc: &TrainDoc, kept: &[usize], device: &B::Device) -> Tensor<B, 2> {
        let n = doc.units.len();
        if kept.len() == n || matches!(self, Vectors::Given) {
            return self.all_units(doc, device);
        }
        let (others, rows) = window_rows(n, kept);
        let frozen = matrix(&others.iter().map(|&u| doc.pooled[u].as_slice()).collect::<Vec<_>>(), device);
        Tensor::cat(vec![self.units(doc, kept, device), frozen], 0).select(0, index(&rows, device))
    }

    /// Whether the vectors come from an encoder a step fine-tunes.
    pub fn fine_tuned(&self) -> bool {
        matches!(self, Vectors::Step(..) | Vectors::Recording(_) | Vectors::Cached(_))
    }

    /// The vectors of `doc`'s every unit.
    pub fn all_units(&self, doc: &TrainDoc, device: &B::Device) -> Tensor<B, 2> {
        self.units(doc, &(0..doc.units.len()).collect::<Vec<_>>(), device)
    }

    /// The vectors of `queries`, `[queries, hidden]`.
    pub fn queries(&self, queries: &[&TrainQuery], device: &B::Device) -> Tensor<B, 2> {
        let ids = || queries.iter().map(|q| q.ids.as_slice()).collect();
        self.rows(ids, || queries.iter().map(|q| q.pooled.as_slice()).collect(), device)
    }

    /// The rows of the given vectors, or of the token ids through the encoder (each read only when needed:
    /// a frozen run holds no token ids).
    fn rows<'r>(&self, ids: impl FnOnce() -> Vec<&'r [u32]>, given: impl FnOnce() -> Vec<&'r [f32]>, device: &B::Device) -> Tensor<B, 2> {
        match self {
            Vectors::Given => matrix(&given(), device),
            Vectors::Step(e, bert) => e.pool(bert, &ids(), device),
            Vectors::Kernel(kernel) => {
                let rows = kernel.embed_ids(&ids(), 32, device, &mut |_| {});
                matrix(&rows.iter().map(Vec::as_slice).collect::<Vec<_>>(), device)
            }
            Vectors::Recording(recorder) => recorder.rows(&ids(), device),
            Vectors::Cached(recorded) => recorded.rows(&ids(), device),
        }
    }
}

/// A document of `n` units split by a window `kept` (sorted): the units outside it, in document order,
/// and each unit's row in the matrix `[kept; others]`.
pub fn window_rows(n: usize, kept: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let others: Vec<usize> = (0..n).filter(|u| kept.binary_search(u).is_err()).collect();
    let row = |u: usize| match kept.binary_search(&u) {
        Ok(i) => i,
        Err(_) => kept.len() + others.binary_search(&u).expect("every unit is in one of the two"),
    };
    let rows = (0..n).map(row).collect();
    (others, rows)
}

/// Positions as the index tensor `select` takes, `[values]`.
pub fn index<B: Backend>(values: &[usize], device: &B::Device) -> Tensor<B, 1, Int> {
    Tensor::from_data(TensorData::new(values.iter().map(|&i| i as i64).collect::<Vec<_>>(), [values.len()]), device)
}

/// Rows of equal width as a `[rows, width]` tensor.
pub fn matrix<B: Backend>(rows: &[&[f32]], device: &B::Device) -> Tensor<B, 2> {
    let width = rows.first().map_or(0, |r| r.len());
    Tensor::from_data(TensorData::new(rows.concat(), [rows.len(), width]), device)
}

/// GradCache's first run of a step's loss ([`Vectors::Recording`], [`crate::grad_cache`]): each input not
/// seen before embedded without a graph, the new inputs of a call shortest first, `chunk` at a time, and
/// noted.
pub struct Recorder<'a, B: Backend> {
    chunk: usize,
    embed: &'a dyn Fn(&[&[u32]]) -> Tensor<B, 2>,
    noted: RefCell<Noted<B>>,
}

/// The inputs a step read: each one's row, and the rows, a tensor per chunk in the order embedded.
pub(crate) struct Noted<B: Backend> {
    pub(crate) at: HashMap<Vec<u32>, usize>,
    pub(crate) rows: Vec<Tensor<B, 2>>,
}

impl<'a, B: Backend> Recorder<'a, B> {
    /// `embed`: the encoder without a graph, over one chunk of token-id rows.
    pub(crate) fn new(chunk: usize, embed: &'a dyn Fn(&[&[u32]]) -> Tensor<B, 2>) -> Self {
        Recorder { chunk, embed, noted: RefCell::new(Noted { at: HashMap::new(), rows: Vec::new() }) }
    }

    /// What the run read.
    pub(crate) fn finish(self) -> Noted<B> {
        self.noted.into_inner()
    }

    /// The vectors of `ids`, `[ids, hidden]`, embedding those not seen before.
    pub(crate) fn rows(&self, ids: &[&[u32]], device: &B::Device) -> Tensor<B, 2> {
        let mut noted = self.noted.borrow_mut();
        let mut new: Vec<&[u32]> = ids.iter().copied().filter(|i| !noted.at.contains_key(*i)).collect();
        new.sort_by(|a, b| a.len().cmp(&b.len()).then(a.cmp(b)));
        new.dedup();
        for piece in new.chunks(self.chunk) {
            let first = noted.at.len();
            noted.at.extend(piece.iter().enumerate().map(|(k, i)| (i.to_vec(), first + k)));
            noted.rows.push((self.embed)(piece));
        }
        let at: Vec<usize> = ids.iter().map(|i| noted.at[*i]).collect();
        Tensor::cat(noted.rows.clone(), 0).select(0, index(&at, device))
    }
}

/// GradCache's second run ([`Vectors::Cached`]): the rows the first run embedded, a leaf the loss's
/// gradient reaches.
pub struct Recorded<B: Backend> {
    pub(crate) at: HashMap<Vec<u32>, usize>,
    pub(crate) reps: Tensor<B, 2>,
}

impl<B: Backend> Recorded<B> {
    /// The rows of `ids`, `[ids, hidden]`.
    pub(crate) fn rows(&self, ids: &[&[u32]], device: &B::Device) -> Tensor<B, 2> {
        let at: Vec<usize> =
            ids.iter().map(|i| *self.at.get(*i).expect("GradCache's second run of the loss reads only the inputs its first run read")).collect();
        self.reps.clone().select(0, index(&at, device))
    }
}
