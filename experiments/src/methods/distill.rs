//! A bi-encoder distilled from the trained cross-encoder (MarginMSE: Hofstätter et al., 2020, arXiv
//! 2010.02666, eq. 1; arbor_losses::margin_mse), as the field uses its rerankers: the reranker
//! ([`super::rerank`]) is trained with the `teacher` settings (or read back: a `Rerank` row with the same
//! settings shares it), scores every pair of its own training examples (each question with its positive
//! units and its pool of hard negatives), and the encoder is fine-tuned to match its margins between a
//! question's positive and each negative, on the reranker's batches, groups, schedule, trunk rate and
//! trainable blocks (arbor_trainers::rerank_control, `Objective::MarginMse`); retrieval is then dense over
//! the leaf units with the student. Its matched control is the reranker's: the same bi-encoder trained on the
//! same triples by L_rank, without the teacher, so the comparison measures what the teacher's scores add.

use arbor_trainers::reranker::{RerankExample, RerankerTraining};
use arbor_trainers::rerank_control::Objective;
use burn::backend::Autodiff;
use serde::{Deserialize, Serialize};

use arbor_models::DefaultBackend;
use arbor_models::reranker::Scorer;

use super::dense::{DenseConfig, flat_through};
use super::rerank::training_examples::{examples, pair_format};
use super::rerank::{control_training, reranker};
use super::training::pretrained;
use super::{Built, Context, MethodSpec, Trains};
use crate::cache::{Artefact, key};
use crate::progress::with_bar;
use crate::trained::{Located, TrainedModel};

/// `Distill((teacher: (train_queries: Some(2000), schedule: (epochs: 1))))` in an experiment file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DistillConfig {
    /// The reranker's training: the teacher these settings train, and the student's examples, batches,
    /// groups, schedule, trunk rate and trainable blocks.
    #[serde(default)]
    pub teacher: RerankerTraining,
}

impl DistillConfig {
    fn teacher_label(&self) -> String {
        let sample = self.teacher.train_queries.map_or(String::new(), |n| format!(", {n} queries"));
        format!("the reranker (top {} blocks, {} epochs{sample}), teacher", self.teacher.trainable_layers, self.teacher.schedule.epochs)
    }
}

impl MethodSpec for DistillConfig {
    fn label(&self) -> String {
        let t = &self.teacher;
        let sample = t.train_queries.map_or(String::new(), |n| format!(", {n} queries"));
        format!(
            "Dense, encoder distilled at {} from the reranker by MarginMSE on its groups (top {} blocks, {} epochs{sample}, tau {})",
            t.lr_encoder,
            t.trainable_layers,
            t.schedule.epochs,
            control_training(t).tau
        )
    }

    fn kind(&self) -> String {
        "Dense, distilled from the reranker".into()
    }

    fn check(&self) -> anyhow::Result<()> {
        self.teacher.check().map_err(anyhow::Error::msg)
    }

    fn trains(&self) -> Trains {
        Trains::Queries(control_training(&self.teacher))
    }

    /// The bi-encoder trained on the same groups by L_rank, without the teacher: the reranker's control.
    fn dense_control(&self) -> Option<DenseConfig> {
        Some(DenseConfig { training: control_training(&self.teacher), reranker: Some(self.teacher.clone()), summary: None, steps_of: None })
    }

    fn build<'a>(&self, ctx: &'a Context<'a>) -> anyhow::Result<Built<'a>> {
        let label = self.label();
        let (scorer, teacher) = reranker(ctx, &self.teacher_label(), &self.teacher)?;
        let format = pair_format(ctx.encoder, &self.teacher);
        let mut made = None;
        let Located { dir, may_train } = ctx.training.locate(&label, self, &ctx.keys.encoder, || {
            let (train, holdout) = made.insert(examples(ctx, &self.teacher)?);
            // The teacher's folder is named by the content key of its training, so it stands for its scores.
            let teacher_key = teacher.dir.file_name().map(|n| n.to_string_lossy().into_owned());
            ctx.cache.dir(Artefact::Dense, &key(&(&ctx.keys.encoder, "distilled by MarginMSE", self, format.max_len, teacher_key, &*train, &*holdout)))
        })?;
        let model = match arbor_trainers::dense::finished(ctx.encoder.dim(), Some(ctx.encoder.bert.clone()), &dir)? {
            Some(model) => {
                eprintln!("using the distilled encoder trained in {}", dir.display());
                model
            }
            None => {
                let Some((mut train, holdout)) = made.filter(|_| may_train) else {
                    anyhow::bail!("{} holds no finished training for method {label:?}", dir.display())
                };
                with_bar("scoring the training pairs with the teacher", |progress| teach(ctx, &scorer, &mut train, progress))?;
                let tau = control_training(&self.teacher).tau;
                let tune = pretrained(ctx)?;
                with_bar("distilling the reranker into the encoder", |progress| {
                    arbor_trainers::rerank_control::train::<Autodiff<DefaultBackend>>(
                        &self.teacher,
                        Objective::MarginMse,
                        tau,
                        tune,
                        format,
                        &train,
                        &holdout,
                        &dir,
                        progress,
                    )
                })?
            }
        };
        let record = TrainedModel { method: label.clone(), settings: serde_json::to_value(self)?, encoder: ctx.keys.encoder.clone(), dir: dir.clone(), ..Default::default() };
        let mut built = flat_through(ctx, label, &model, &dir, None, record)?;
        built.details = Some(format!("teacher: {}", teacher.dir.display()));
        built.models.push(teacher);
        Ok(built)
    }
}

/// Every pair of `examples` (each question with its positives and its pool of negatives) scored by the teacher.
fn teach(ctx: &Context, scorer: &Scorer<DefaultBackend>, examples: &mut [RerankExample], progress: &mut dyn FnMut(usize, usize)) -> anyhow::Result<()> {
    let total = examples.len();
    for (done, ex) in examples.iter_mut().enumerate() {
        let texts: Vec<&[u32]> = ex.positives.iter().chain(&ex.negatives).map(|c| c.ids.as_slice()).collect();
        let priors: Vec<f32> = ex.positives.iter().chain(&ex.negatives).map(|c| c.prior).collect();
        let scores = scorer.score_pieces(ctx.encoder, &ex.query, &texts, &priors, ctx.encoder_config.batch_size);
        for (c, s) in ex.positives.iter_mut().chain(ex.negatives.iter_mut()).zip(scores) {
            c.teacher = Some(s);
        }
        progress(done + 1, total);
    }
    Ok(())
}
