//! The kinds of cached artefact ([`Artefact`]): for each, the folder prefix it lives under, the version of
//! the code that makes it (part of every key of that kind) and the root files of that code, from which
//! tests/artefact_versions/ follows every path the code names into the workspace's crates and digests
//! what it reaches against `experiments/artefact-versions.txt`. The versions, each with the history of
//! what changed, are in `versions.rs`; neither file is digested (a bump would otherwise change every kind).

mod versions;

/// A kind of cached artefact: the folder prefix it lives under, the version of the code that makes it, and
/// the root files (relative to the workspace) of that code; tests/artefact_versions/ digests every file
/// they reach against `experiments/artefact-versions.txt`: change any of them and the test fails until
/// the version is bumped (and recorded), so artefacts of the old code are never read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Artefact {
    /// The encoder's unit vectors (the frozen encoder's, or a fine-tuned one's).
    Units,
    /// The encoder's query vectors.
    Queries,
    /// A method's own chunks' vectors (windows, semantic chunks, AutoContext, SmartChunk levels).
    Chunks,
    /// SproutRAG's trees.
    Trees,
    /// RAPTOR's trees.
    Raptor,
    /// Trained models, by trainer.
    SproutRag,
    HeadWeights,
    Reranker,
    Compressor,
    Planner,
    Dense,
}

/// The encoder's code: every artefact computed through it lists these.
const ENCODER: [&str; 3] = ["models/src/encoder.rs", "models/src/bert", "files/src/lib.rs"];
/// The unit cutter: every artefact reads the units it cuts.
const UNITS: [&str; 1] = ["experiments/src/leaves.rs"];
/// The trainer skeleton and the checkpoints every trained model goes through.
const TRAINING: [&str; 7] = [
    "trainers/src/skeleton.rs",
    "trainers/src/checkpoint.rs",
    "trainers/src/data.rs",
    "trainers/src/config.rs",
    "trainers/src/schedule.rs",
    "trainers/src/strategy.rs",
    "losses/src",
];

impl Artefact {
    pub const ALL: [Artefact; 11] = [
        Artefact::Units,
        Artefact::Queries,
        Artefact::Chunks,
        Artefact::Trees,
        Artefact::Raptor,
        Artefact::SproutRag,
        Artefact::HeadWeights,
        Artefact::Reranker,
        Artefact::Compressor,
        Artefact::Planner,
        Artefact::Dense,
    ];

    /// The folder prefix: `<folder>-<key>`.
    pub fn folder(self) -> &'static str {
        match self {
            Artefact::Units => "units",
            Artefact::Queries => "queries",
            Artefact::Chunks => "chunks",
            Artefact::Trees => "trees",
            Artefact::Raptor => "raptor",
            _ => "train",
        }
    }

    /// Its name in artefact-versions.txt.
    pub fn name(self) -> &'static str {
        match self {
            Artefact::SproutRag => "train-sproutrag",
            Artefact::HeadWeights => "train-head-weights",
            Artefact::Reranker => "train-reranker",
            Artefact::Compressor => "train-compressor",
            Artefact::Planner => "train-planner",
            Artefact::Dense => "train-dense",
            other => other.folder(),
        }
    }

    /// The root files and folders (relative to the workspace) of the code that makes it: the digest reaches
    /// whatever they name from there, so a root list need only hold where the code starts.
    pub fn sources(self) -> Vec<&'static str> {
        let own: &[&str] = match self {
            Artefact::Units | Artefact::Queries | Artefact::Chunks => &["eval/src/formats/vectors_io.rs"],
            Artefact::Trees => &[
                "eval/src/structures/tree.rs",
                "eval/src/formats/tree_io.rs",
                "models/src/unit_attention.rs",
                "models/src/aggregator.rs",
                "experiments/src/methods/sproutrag/mod.rs",
            ],
            Artefact::Raptor => &[
                "eval/src/retrievers/raptor.rs",
                "eval/src/structures/gmm.rs",
                "eval/src/formats/raptor_io.rs",
                "experiments/src/methods/raptor.rs",
                "experiments/src/summaries",
            ],
            Artefact::SproutRag => &[
                "trainers/src/sproutrag",
                "trainers/src/encoder.rs",
                "trainers/src/window.rs",
                "trainers/src/parallel",
                "trainers/src/learner.rs",
                "models/src/sproutrag.rs",
                "models/src/sllm.rs",
                "models/src/sentence_vae.rs",
                "models/src/aggregator.rs",
                "experiments/src/methods/sproutrag/train.rs",
                "experiments/src/methods/training.rs",
            ],
            Artefact::HeadWeights => &[
                "trainers/src/head_weights.rs",
                "models/src/unit_attention.rs",
                "models/src/aggregator.rs",
                "experiments/src/methods/sproutrag/train.rs",
            ],
            Artefact::Reranker => &["trainers/src/reranker.rs", "models/src/reranker.rs", "experiments/src/methods/rerank"],
            Artefact::Compressor => &[
                "trainers/src/compressor.rs",
                "trainers/src/learner.rs",
                "trainers/src/parallel/mod.rs",
                "models/src/compressor.rs",
                "experiments/src/methods/smartchunk/train.rs",
            ],
            Artefact::Planner => &[
                "trainers/src/planner",
                "trainers/src/stitch.rs",
                "trainers/src/learner.rs",
                "trainers/src/parallel/mod.rs",
                "trainers/src/encoder.rs",
                "models/src/planner.rs",
                "experiments/src/methods/smartchunk/plan.rs",
            ],
            Artefact::Dense => &[
                "trainers/src/dense",
                "trainers/src/parallel",
                "trainers/src/learner.rs",
                "trainers/src/encoder.rs",
                "trainers/src/window.rs",
                "models/src/dense.rs",
                "experiments/src/methods/dense.rs",
                "experiments/src/methods/training.rs",
            ],
        };
        let trained = !matches!(self, Artefact::Units | Artefact::Queries | Artefact::Chunks | Artefact::Trees | Artefact::Raptor);
        let mut all: Vec<&'static str> = own.to_vec();
        all.extend(ENCODER);
        all.extend(UNITS);
        if trained {
            all.extend(TRAINING);
        }
        all
    }
}
