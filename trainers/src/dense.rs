//! The matched control's training ([`arbor_models::dense::DenseModel`]): per step, one document and a
//! batch of its queries, exactly the batches, epochs, seed and schedule of SproutRAG's joint training
//! ([`crate::sproutrag`]) on the same documents, with its retrieval term alone,
//!
//! ```text
//! L = L_ret = InfoNCE(queries, positive units; in-batch and in-document negatives, tau)
//! ```
//!
//! and no SLLM, tree, L_attn or L_node: what the training queries give plain dense retrieval. The encoder
//! is fine-tuned at `lr_encoder` when the method it controls fine-tunes it; else a linear map over the
//! frozen vectors trains at `lr_new`. The checkpoint kept is the epoch with the best validation IE.

use std::path::Path;

use arbor_datasets::Corpus;
use arbor_models::bert::Bert;
use arbor_models::dense::DenseModel;
use burn::module::AutodiffModule;
use burn::optim::GradientsParams;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorData};

use crate::config::TrainConfig;
use crate::data::{EpochBatches, TrainDoc, TrainQuery};
use crate::skeleton::{self, Group, SelectBy, Step, Task};
use crate::sproutrag::{flat_on_held_out, retrieval_loss};

/// Trains the control; `encoder`: the pretrained encoder when it is fine-tuned (else the frozen vectors
/// in `train` and `holdout` are read, `dim` wide).
#[allow(clippy::too_many_arguments)]
pub fn train<B: AutodiffBackend>(
    config: &TrainConfig,
    dim: usize,
    encoder: Option<Bert<B>>,
    corpus: &Corpus,
    train: &[TrainDoc],
    holdout: &[TrainDoc],
    run_dir: &Path,
    progress: &mut dyn FnMut(usize, usize),
) -> anyhow::Result<DenseModel<B::InnerBackend>> {
    config.check().map_err(anyhow::Error::msg)?;
    anyhow::ensure!(train.iter().any(|d| !d.queries.is_empty()), "no training query: check training.split");
    let device = Default::default();
    B::seed(&device, config.schedule.seed);
    let group = match encoder.is_some() {
        true => Group { name: "encoder", lr: config.lr_encoder, params: |g, m: &DenseModel<B>| GradientsParams::from_module(g, m) },
        false => Group { name: "adapter", lr: config.lr_new, params: |g, m: &DenseModel<B>| GradientsParams::from_module(g, m) },
    };
    let model = DenseModel::new(dim, encoder, &device);
    let batches = EpochBatches::new(train, config.batch_size, config.schedule.seed);
    let mut task = PlainRetrieval { config, corpus, train, holdout, batches };
    Ok(skeleton::train(&mut task, model, &[group], &config.schedule, run_dir, progress)?.valid())
}

/// The control of a finished run in `run_dir`, if it has finished.
pub fn finished<B: Backend>(dim: usize, encoder: Option<Bert<B>>, run_dir: &Path) -> anyhow::Result<Option<DenseModel<B>>> {
    skeleton::finished(DenseModel::new(dim, encoder, &Default::default()), run_dir)
}

struct PlainRetrieval<'a> {
    config: &'a TrainConfig,
    corpus: &'a Corpus,
    train: &'a [TrainDoc],
    holdout: &'a [TrainDoc],
    batches: EpochBatches,
}

impl<B: AutodiffBackend> Task<B> for PlainRetrieval<'_> {
    type Model = DenseModel<B>;

    fn steps_per_epoch(&self) -> usize {
        self.batches.per_epoch()
    }

    fn step(&mut self, model: &DenseModel<B>, step: usize) -> anyhow::Result<Step<B>> {
        let batch = self.batches.at(self.train, step);
        let doc = &self.train[batch.doc];
        let device = Default::default();
        let queries: Vec<&TrainQuery> = batch.queries.iter().map(|&q| &doc.queries[q]).collect();
        let positives: Vec<usize> = queries.iter().map(|q| q.positive).collect();
        let (units, eq) = (units(model, doc, &device), query_vectors(model, &queries, &device));
        let terms = vec![("loss/ret", retrieval_loss(units, eq, &positives, self.config))];
        Ok(Step { terms, scalars: Vec::new(), context: format!("document {}, {} queries", batch.doc, batch.queries.len()) })
    }

    fn evaluate(&self, model: &DenseModel<B::InnerBackend>) -> Vec<(&'static str, f64)> {
        if self.holdout.is_empty() {
            return Vec::new();
        }
        let device = Default::default();
        let m = flat_on_held_out(self.corpus, self.holdout, |doc| {
            (units(model, doc, &device), query_vectors(model, &doc.queries.iter().collect::<Vec<_>>(), &device))
        });
        vec![("eval/ie_mean", m.ie_mean), ("eval/hit@1", m.hit[0]), ("eval/hit@5", m.hit[2])]
    }

    fn select_by(&self) -> Option<SelectBy> {
        Some(SelectBy { figure: "eval/ie_mean", higher_is_better: true })
    }
}

/// A document's unit embeddings: through the fine-tuned encoder, or the frozen vectors through the adapter.
fn units<B: Backend>(model: &DenseModel<B>, doc: &TrainDoc, device: &B::Device) -> Tensor<B, 2> {
    match &model.encoder {
        Some(_) => model.pool(&doc.ids.iter().map(Vec::as_slice).collect::<Vec<_>>(), device),
        None => model.embed(rows(&doc.pooled, device)),
    }
}

fn query_vectors<B: Backend>(model: &DenseModel<B>, queries: &[&TrainQuery], device: &B::Device) -> Tensor<B, 2> {
    match &model.encoder {
        Some(_) => model.pool(&queries.iter().map(|q| q.ids.as_slice()).collect::<Vec<_>>(), device),
        None => model.embed(rows(&queries.iter().map(|q| q.pooled.clone()).collect::<Vec<_>>(), device)),
    }
}

fn rows<B: Backend>(rows: &[Vec<f32>], device: &B::Device) -> Tensor<B, 2> {
    Tensor::from_data(TensorData::new(rows.concat(), [rows.len(), rows[0].len()]), device)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::Schedule;
    use arbor_datasets::{DocSpan, Document, Span};
    use arbor_models::DefaultBackend;
    use burn::backend::Autodiff;

    /// Two documents of five units in 8-d: units 0-3 are the axes e0..e3, unit 4 is e7; query k asks for unit
    /// k but its pooled vector is e_k + 2 e7, nearer unit 4. The map must learn to shrink e7, and validation
    /// hit@1 goes from 0 to 100.
    #[test]
    fn the_adapter_learns_what_the_queries_teach_and_keeps_the_best_epoch() {
        let text = "aaaa bbbb cccc dddd eeee";
        let corpus = Corpus::new(
            (0..2).map(|i| Document { id: format!("d{i}"), title: String::new(), text: text.into(), sections: vec![], split: None }).collect(),
            vec![],
            Path::new("t"),
        )
        .unwrap();
        let axis = |k: usize| (0..8).map(|i| if i == k { 1.0 } else { 0.0 }).collect::<Vec<f32>>();
        let doc = |d: usize| {
            let units: Vec<DocSpan> = (0..5).map(|i| DocSpan { doc: d, span: Span::new(5 * i, 5 * i + 4) }).collect();
            let pooled = vec![axis(0), axis(1), axis(2), axis(3), axis(7)];
            let query = |k: usize| {
                let v: Vec<f32> = axis(k).iter().zip(axis(7)).map(|(a, b)| (a + 2.0 * b) / 5f32.sqrt()).collect();
                TrainQuery { pooled: v, ids: vec![], positive: k, gold: vec![units[k]] }
            };
            TrainDoc { units: units.clone(), pooled, ids: vec![], pairs: vec![], tokens: vec![], queries: (0..4).map(query).collect() }
        };
        let (train_docs, holdout) = (vec![doc(0)], vec![doc(1)]);
        let config = TrainConfig {
            schedule: Schedule { epochs: 20, checkpoint_every: 1000, ..Schedule::default() },
            batch_size: 4,
            lr_new: 0.05,
            ..TrainConfig::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let model = train::<Autodiff<DefaultBackend>>(&config, 8, None, &corpus, &train_docs, &holdout, dir.path(), &mut |_, _| {}).unwrap();
        let hit1 = |m: &DenseModel<DefaultBackend>| {
            flat_on_held_out(&corpus, &holdout, |d| {
                (units(m, d, &Default::default()), query_vectors(m, &d.queries.iter().collect::<Vec<_>>(), &Default::default()))
            })
            .hit[0]
        };
        let (before, after) = (hit1(&DenseModel::new(8, None, &Default::default())), hit1(&model));
        assert!(before == 0.0 && after == 100.0, "hit@1 {before} -> {after}");
        let back = finished::<DefaultBackend>(8, None, dir.path()).unwrap().expect("complete");
        let state = crate::checkpoint::state(&dir.path().join("checkpoints")).unwrap().unwrap();
        assert!(state.best.is_some(), "the best epoch on validation is kept");
        let probe = rows::<DefaultBackend>(&[vec![0.3; 8]], &Default::default());
        assert_eq!(back.embed(probe.clone()).into_data(), model.embed(probe).into_data(), "the trained model is the best epoch's");
    }
}
