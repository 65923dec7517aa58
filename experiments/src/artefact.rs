//! The kinds of cached artefact ([`Artefact`]): for each, the folder prefix it lives under, the version of
//! the code that makes it (part of every key of that kind) and the root files of that code, from which
//! tests/artefact_versions/ follows every path the code names into the workspace's crates and digests
//! what it reaches against `experiments/artefact-versions.txt`.

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

    /// The version of the code that makes it: bump it when that code changes.
    pub fn version(self) -> u32 {
        match self {
            // Every kind is at least 2: the CPU kernel's attention and softmax changed (`gemm`, `exp_neg`); at
            // least 3: the encoder's code gained the frozen lower blocks and the kernel's own batching.
            // 4: pooling and prompts as encoder settings (arbor_models::pooling): none by default, so a default encoder's vectors do not change
            // 5: the linkage rule of SproutRAG's trees (eval's linkage: single by default, average, complete, adjacent); single linkage's trees unchanged
            // 6: the CPU kernel's attention keeps its probabilities for the hand-written backward pass (bert::tape); the vectors are unchanged
            // 7: the hand-written step above frozen blocks copies no embedding table; no behaviour changed
            // 8: `units.context`'s header is a cut sentence's lines before its first data row (datasets units.rs `table_head`: a statement's title and column row as pdftotext lays them out), not its first line, and no page number as the line before; without `context` nothing changes; the metric columns in one table (eval's scoring/columns.rs); the file helpers in their own crate (files/); SproutRAG's build in parts; every trained method takes units.context headers (the SLLM's SentenceVAE reads each unit's input; the refusal gone); the cut sentences kept (`Segmented::cut`) for `retrieval.whole_sentences`; `DocSpan::contains` and `arbor_files::hex` shared (no behaviour changed)
            // 9: `units.context` by default (64 tokens) for the pieces of a cut *table* only (`units.context_on`: Tables, or CutSentences as before), `Segmented::tables`, `retrieval.hand_on: Tables` by default; a run of more than four digits without a separator is no data row (datasets units.rs `is_data_row`, `is_table`); where no table is cut nothing changes
            // 10: the unit cutter (experiments/src/leaves.rs) and the computing dependencies Cargo.lock pins in every kind's digest, which now keeps import aliases and cuts a test-only field, variant or arm alone (issue 61); no vector changed
            // 11: the document level above the trees (eval tree_retrieval.rs `DocumentLevel`, `Retriever::kept_documents`, the report's `documents_kept`, its named comparators `compare_with`; issue 62); without them nothing changes
            // 12: review: one home for a step's rows of several documents (trainers objective.rs `one_or_cat`), the report's named comparators filtered once (an untrained one meets no row twice), `parents::around` tries a line without copying what it took; eval's `runner::hand_on` (what a method hands on for one query: parents, then the budget) shared by `evaluate` and `arbor query`; no behaviour changed
            // 13: `ARBOR_KERNELS=avx2` (models bert/avx2.rs: gemm's AVX2 + FMA microkernels on a processor with AVX-512, issue 64), gemm-common and gemm-f32 named in the manifests; by default nothing changed
            // 14: the encoder's element-wise passes of the hand-written backward pass at the processor's width and an AVX-512 version of each beside the AVX2 one (models bert/cpu.rs `multiversion!`, following ARBOR_KERNELS; the softmax's loop inside its target features), models/build.rs records the crate's opt-level for the encoder benchmark, the step benchmark over several documents (trainers bench/joint.rs `FixedJointStep`; issues 62 and 64): the same floats, no behaviour changed
            // 15: one refusal of a build slower than users run for the encoder and scale benchmarks (models processor.rs `ensure_release_build`); no behaviour changed
            // 16: training.precision (issue 65: bf16 autocast in Burn's BERT forward, models bert precision.rs; the step encoder's precision, trainers encoder.rs `StepEncoder::of`), the CPU build's pass without a graph (GradCache's first) through the inference kernel, the dense trainer's corpus-wide task for the large-batch benchmark (`corpus_task`, bench pairs.rs); float32 steps unchanged, GradCache's first pass on the CPU to float rounding
            // 17: review of the change before: the bf16 tests on burn-flex left out of a build with Burn's collectives (models and trainers `ddp`), the step's bf16 test moved beside the step (trainers dense step.rs); no behaviour changed
            // 18: the bf16 tests marked `#[cfg(test)]` (a test module is no part of a digest), no behaviour changed
            // 19: attention spread over the thread pool by head for long sequences (the same floats), the CPU optimizer fused (trainers' adamw.rs: Burn's AdamW and clipping element by element, the same weights to the clipping norm's rounding)
            // 20: review: FusedAdamW's clip always set, the parallel trainer's AdamW from adamw::config, the skeleton's step_gradients (a step's loss and gradients, cached or plain) shared with the large-batch bench (no behaviour changed)
            // 21: the bench profile's opt-level overrides, which never reached `cargo test --release`, removed from Cargo.toml and the doc comments that named them corrected (models processor.rs); no behaviour changed
            // 22: arbor-ablations compiled at opt-level 0 (the workspace manifest's release profile: its sweeps, tables and verdicts run no model); no behaviour changed
            // 23: `BertLayer::forward_observed` (a block's forward shows each step to an observer; `forward_in` passes none: the same floats) and the forward trace (models bert/trace.rs, `arbor trace-forward`: issue 65's numerics); no behaviour changed
            // 24: review: the trace observes `Bert::forward_from_observed` (the encoder's own loop, `forward_from_in` passes no observer: the same floats), `Precision::ensure_supported` one refusal for the trainers, `train` and `arbor trace-forward`, encoder.rs `read_config` shared with the trace; no behaviour changed
            // 25: the `flex` feature (burn-flex as the backend, models/src/backend.rs) and the bf16 refusal naming it; the default build's floats unchanged
            // 26: the encoder families by config.json's `model_type` (models bert/families: BERT, RoBERTa, XLM-RoBERTa, MPNet; offset positions, no token types, MPNet's relative position bias in every kernel and its gradient), the CPU kernel's attention in its own file (bert/attention.rs); a BERT encoder's floats unchanged
            // 27: a randomly initialised encoder of a family from its config.json (models bert/init.rs, `arbor init-model`) and `encoder::vocabulary_size`; no behaviour changed
            // 28: issue 86: every key names the backend (cache `versioned_under`: the flex, ndarray and CUDA builds share no artefact), the digest reads every manifest's asks and features (digest 5), `Retriever: Send + Sync` for the server's pool, the matched control keeps the row's precision, SproutRAG's document term leaves out a document holding the query's gold, models record sketches of what they trained on
            Artefact::Units | Artefact::Queries | Artefact::Chunks => 28,
            // 4: `RaptorSearchConfig` refuses unknown fields; 5: the digest reaches every file the code names.
            // 6: the methods' registry changed (the reranker's control)
            // 7: `training.min_steps`, the planner's control reading the planner's own training
            // 8: the shared objective (L_ret, the held-out reading) moved into trainers' objective.rs
            // 9: the schedule's floor of steps in one place (`Schedule::at_least`); no behaviour changed
            // 10: `training.negatives` (batches across documents, negatives mined from the training split: trainers' negatives.rs), a training query's text, unit ids read as the encoder reads them, GradCache (`training.grad_cache`), the planner's control batched across documents
            // 11: GradCache takes each side's rows in order of length (chunks pad less); no other behaviour changed
            // 12: review: mining builds no index for in-batch negatives only and computes each unit's norm once; no behaviour changed
            // 13: the skeleton's AdamW in one function (`skeleton::optimizer`, which the step benchmark reads too) and the run's set-up in `run::prepare`; no behaviour changed
            // 14: review: one dot product in the trainers (window.rs's, which mining now calls too) and one home for a window's rows (`encoder::window_rows`); no behaviour changed
            // 15: random numbers drawn on the host (arbor_models::host: initial weights, VAE noise), so a GPU build trains what the CPU build trains; a CPU build draws what it drew before
            // 16: the run loads its encoder through arbor_models::pipeline::load (a folder whose sentence-transformers pipeline is not arbor's is refused); no behaviour changed
            // 17: files split so that they import downwards (trainers dense/step.rs and sproutrag/step.rs, the reranker's training_examples.rs, utc_stamp in provenance.rs); no behaviour changed
            // 18: the query-trained trainers' start (settings checked, a training query, the seed) in one function, objective::start; no behaviour changed
            // 19: pooling and prompts as encoder settings (arbor_models::pooling): none by default, so a default encoder's vectors do not change
            // 20: the trees' shape (eval's tree_shape: depth, balance, contiguity) in the SproutRAG rows' report line; no artefact changed
            // 21: the linkage rule of SproutRAG's trees (eval's linkage: single by default, average, complete, adjacent); single linkage's trees unchanged
            // 22: the trees' shape reported through `Retriever::tree_shape` (report.json, arbor inspect); no artefact changed
            // 23: review: the trees' shape reads `Tree::depths` and `Tree::size` instead of computing them again; no behaviour changed
            // 24: the fine-tuning step's encoder by hand on the CPU (arbor_models::bert::autodiff and tape): the exact GELU derivative where Burn's differentiates the tanh approximation
            // 25: the reranker's step in the step benchmark (trainers' bench/rerank.rs, `step_flops` over any sides); no behaviour changed
            // 26: the reranker (and its control) train and score each unit's input (`units.context`'s header, then the piece); without headers nothing changes
            // 27: the hand-written step above frozen blocks copies no embedding table; no behaviour changed
            // 28: `training.negatives: Mined` (one document a step, negatives mined from the other training documents) for the dense trainer and SproutRAG's joint step; existing settings unchanged
            // 29: `training.validation: Corpus` (held-out queries read over every validation document's units); the default reading unchanged
            // 30: rows trained with `validation: Corpus` say so in their label; no artefact changed
            // 31: review: the held-out reading groups documents (one, or all) instead of flushing rows; the dense trainer's batches chosen by the setting; no behaviour changed
            // 32: `units.context`'s header is a cut sentence's lines before its first data row (datasets units.rs `table_head`: a statement's title and column row as pdftotext lays them out), not its first line, and no page number as the line before; without `context` nothing changes; the metric columns in one table (eval's scoring/columns.rs); the file helpers in their own crate (files/); SproutRAG's build in parts; every trained method takes units.context headers (the SLLM's SentenceVAE reads each unit's input; the refusal gone); the cut sentences kept (`Segmented::cut`) for `retrieval.whole_sentences`; `DocSpan::contains` and `arbor_files::hex` shared (no behaviour changed)
            // 33: eval's scoring/sentences.rs became parents.rs (`retrieval.hand_on`: whole sentences or paragraphs); `MethodSpec::serve` (`arbor query` through the methods' registry, stored.rs); no behaviour of this kind changed
            // 34: SAC fine-tuned over its document headers (`SummaryChunks((training: Some(..)))`: the dense trainer's `Needs::headers`, `tuned_unit_vectors` with headers, chunks embedded by what the encoder reads); without headers nothing changes; the reranker's examples carry an optional teacher score (serialised only when set) and its control's trainer a MarginMSE objective (`Distill`)
            // 35: `summary` on Dense and SproutRAG (every unit read after its document's summary, SAC's inputs; SproutRAG's control the dense fine-tune over the same summaries; `DocumentSummary` shared by SAC, RSE, Dense and SproutRAG); without it nothing changes; SproutRAG's joint trainer's start and optimizer groups as functions the step benchmark shares (trainers' bench/joint.rs; no behaviour changed)
            // 36: `units.context` by default (64 tokens) for the pieces of a cut *table* only (`units.context_on`: Tables, or CutSentences as before), `Segmented::tables`, `retrieval.hand_on: Tables` by default; a run of more than four digits without a separator is no data row (datasets units.rs `is_data_row`, `is_table`); where no table is cut nothing changes
            // 37: the unit cutter (experiments/src/leaves.rs) and the computing dependencies Cargo.lock pins in every kind's digest, which now keeps import aliases and cuts a test-only field, variant or arm alone (issue 61); no tree changed
            // 38: the document level above the trees (eval tree_retrieval.rs `DocumentLevel`, `Retriever::kept_documents`, the report's `documents_kept`, its named comparators `compare_with`; issue 62); without them nothing changes
            // 39: review: one home for a step's rows of several documents (trainers objective.rs `one_or_cat`), the report's named comparators filtered once (an untrained one meets no row twice), `parents::around` tries a line without copying what it took; eval's `runner::hand_on` (what a method hands on for one query: parents, then the budget) shared by `evaluate` and `arbor query`; no behaviour changed
            // 40: review: one reading of an index's `meta.units` (experiments stored.rs `unit_rule`), the opened index keeps no copy of its rule; no behaviour changed
            // 41: the crate's unit tests moved to its integration binary (tests/integration/unit/), what they call made public (a SAC summary's `header`, SmartChunk's `plan` module, `ById::holds`, ...); no behaviour changed
            // 42: `ARBOR_KERNELS=avx2` (models bert/avx2.rs: gemm's AVX2 + FMA microkernels on a processor with AVX-512, issue 64), gemm-common and gemm-f32 named in the manifests; by default nothing changed
            // 43: the document level above every tree method (eval retrievers/document_level.rs `Scoped`, `DocumentVector::Summary`; RAPTOR's and the heading hierarchy's `documents`; issue 62): SproutRAG's level moved out of tree_retrieval.rs, its rankings unchanged; without a level nothing changes
            // 44: `evaluate` without --from refuses a trained row before loading anything (`Trains::needs_model`, `Training::never_trained`); reproduce's corpus-scope section; no behaviour of this kind changed
            // 45: review: one rule for a header's document name (document_summary `header_name`) and one form of a headed input (chunks `headed`), shared with indexes; the distilled student serves an index; no behaviour of this kind changed
            // 46: the encoder's element-wise passes of the hand-written backward pass at the processor's width and an AVX-512 version of each beside the AVX2 one (models bert/cpu.rs `multiversion!`, following ARBOR_KERNELS; the softmax's loop inside its target features), models/build.rs records the crate's opt-level for the encoder benchmark, the step benchmark over several documents (trainers bench/joint.rs `FixedJointStep`; issues 62 and 64): the same floats, no behaviour changed
            // 47: one refusal of a build slower than users run for the encoder and scale benchmarks (models processor.rs `ensure_release_build`); no behaviour changed
            // 48: the method's serving over a stored index takes the opened index with its encoder and the run's row (methods `Serving`; issue 63: trained SproutRAG rows and rerankers serve `arbor index --from`, sproutrag serve.rs `RowTrees` one home for a row's trees over new documents), SproutRAG's finished model read on any backend (trainers sproutrag `finished`), the reranker's loading in one function (`finished_scorer`); no behaviour changed
            // 49: the host's generator held while a seed draws and the target loads (models host.rs `holding`: two trainings or tests drawing at once each get their own seed's numbers; a test's draws had fallen between another's seeding and drawing); no behaviour changed in one training
            // 50: review: SproutRAG's served trees reuse `rows`, the index's record of a trained row made in one piece (library trained.rs `Servable`); no behaviour changed
            // 51: the methods' serving over a stored index may go through the approximate index it keeps (methods `Serving.neighbours`, Flat's serve; issue 63: `arbor index --approximate`, store approximate.rs); no behaviour changed
            // 52: training.precision (issue 65: bf16 autocast in Burn's BERT forward, models bert precision.rs; the step encoder's precision, trainers encoder.rs `StepEncoder::of`), the CPU build's pass without a graph (GradCache's first) through the inference kernel, the dense trainer's corpus-wide task for the large-batch benchmark (`corpus_task`, bench pairs.rs); float32 steps unchanged, GradCache's first pass on the CPU to float rounding
            // 53: review of the change before: the bf16 tests on burn-flex left out of a build with Burn's collectives (models and trainers `ddp`), the step's bf16 test moved beside the step (trainers dense step.rs); no behaviour changed
            // 54: the bf16 tests marked `#[cfg(test)]` (a test module is no part of a digest), no behaviour changed
            // 55: attention spread over the thread pool by head for long sequences (the same floats), the CPU optimizer fused (trainers' adamw.rs: Burn's AdamW and clipping element by element, the same weights to the clipping norm's rounding)
            // 56: review: FusedAdamW's clip always set, the parallel trainer's AdamW from adamw::config, the skeleton's step_gradients (a step's loss and gradients, cached or plain) shared with the large-batch bench (no behaviour changed)
            // 57: the bench profile's opt-level overrides, which never reached `cargo test --release`, removed from Cargo.toml and the doc comments that named them corrected (models processor.rs); no behaviour changed
            // 58: arbor-ablations compiled at opt-level 0 (the workspace manifest's release profile: its sweeps, tables and verdicts run no model); no behaviour changed
            // 59: `BertLayer::forward_observed` (a block's forward shows each step to an observer; `forward_in` passes none: the same floats) and the forward trace (models bert/trace.rs, `arbor trace-forward`: issue 65's numerics); no behaviour changed
            // 60: a row's name says `bf16 autocast` when it trains so (methods training.rs `in_bf16`), `train` refuses a row this build cannot train before anything trains (run.rs `trainable_here`), two rows of one name refused (experiment.rs); no float32 row's name or artefact changed
            // 61: a row trained on a sample of its split's questions (`train_queries`) says so in its name (methods training.rs `on_a_sample`: Dense, SproutRAG), so that a learning curve's point and a trained row's all-question control are two rows; no artefact changed
            // 62: review: the trace observes `Bert::forward_from_observed` (the encoder's own loop, `forward_from_in` passes no observer: the same floats), `Precision::ensure_supported` one refusal for the trainers, `train` and `arbor trace-forward`, encoder.rs `read_config` shared with the trace; no behaviour changed
            // 63: GradCache in SproutRAG's joint step and in the dense trainer's in-document step (trainers grad_cache.rs: the step's own loss run once over `Vectors::Recording` to find and embed its inputs without a graph, then over `Vectors::Cached`; the dense corpus-wide step's cache now the same code, its gradient the same to rounding), `training.grad_cache` with any batches on arbor's own loop, a row's name says GradCache when it is set; `train` refuses a DDP row on a build without `ddp` before anything trains (run.rs `trainable_here`, trainers strategy.rs `ensure_supported`)
            // 64: review: GradCache's step takes the step encoder and the fine-tuned weights itself (the two trainers' copies of its embedding closures gone), each chunk's rows derived from the recorded rows instead of a second copy of their ids; the same floats
            // 65: the `flex` feature (burn-flex as the backend, models/src/backend.rs) and the bf16 refusal naming it; the default build's floats unchanged
            // 66: the encoder families by config.json's `model_type` (models bert/families: BERT, RoBERTa, XLM-RoBERTa, MPNet; offset positions, no token types, MPNet's relative position bias in every kernel and its gradient), the CPU kernel's attention in its own file (bert/attention.rs); a BERT encoder's floats unchanged
            // 67: a randomly initialised encoder of a family from its config.json (models bert/init.rs, `arbor init-model`) and `encoder::vocabulary_size`; no behaviour changed
            // 68: issue 86: every key names the backend (cache `versioned_under`: the flex, ndarray and CUDA builds share no artefact), the digest reads every manifest's asks and features (digest 5), `Retriever: Send + Sync` for the server's pool, the matched control keeps the row's precision, SproutRAG's document term leaves out a document holding the query's gold, models record sketches of what they trained on
            Artefact::Raptor => 68,
            // 2: trees rebuilt from stored merges (`Tree::from_merges`) and the default tree `arbor index` stores;
            // 3: the CPU kernel; 4: the encoder's code; 5: a trained SproutRAG row names its devices; 6: the
            // `LeavesInContext` search's label; 7: `AttentionSource` refuses unknown fields; 8: the digest
            // reaches every file the code names (the methods' registry, `Trains` with its split,
            // `TrainedModel::trained_on`).
            // 9: the methods' registry changed (the reranker's control)
            // 10: `training.min_steps`, the planner's control reading the planner's own training
            // 11: the shared objective (L_ret, the held-out reading) moved into trainers' objective.rs
            // 12: the schedule's floor of steps in one place (`Schedule::at_least`); no behaviour changed
            // 13: `training.negatives` (batches across documents, negatives mined from the training split: trainers' negatives.rs), a training query's text, unit ids read as the encoder reads them, GradCache (`training.grad_cache`), the planner's control batched across documents
            // 14: GradCache takes each side's rows in order of length (chunks pad less); no other behaviour changed
            // 15: review: mining builds no index for in-batch negatives only and computes each unit's norm once; no behaviour changed
            // 16: the skeleton's AdamW in one function (`skeleton::optimizer`, which the step benchmark reads too) and the run's set-up in `run::prepare`; no behaviour changed
            // 17: review: one dot product in the trainers (window.rs's, which mining now calls too) and one home for a window's rows (`encoder::window_rows`); no behaviour changed
            // 18: random numbers drawn on the host (arbor_models::host: initial weights, VAE noise), so a GPU build trains what the CPU build trains; a CPU build draws what it drew before
            // 19: the run loads its encoder through arbor_models::pipeline::load (a folder whose sentence-transformers pipeline is not arbor's is refused); no behaviour changed
            // 20: files split so that they import downwards (trainers dense/step.rs and sproutrag/step.rs, the reranker's training_examples.rs, utc_stamp in provenance.rs); no behaviour changed
            // 21: the query-trained trainers' start (settings checked, a training query, the seed) in one function, objective::start; no behaviour changed
            // 22: pooling and prompts as encoder settings (arbor_models::pooling): none by default, so a default encoder's vectors do not change
            // 23: the trees' shape (eval's tree_shape: depth, balance, contiguity) in the SproutRAG rows' report line; no artefact changed
            // 24: the linkage rule of SproutRAG's trees (eval's linkage: single by default, average, complete, adjacent); single linkage's trees unchanged
            // 25: the trees' shape reported through `Retriever::tree_shape` (report.json, arbor inspect); no artefact changed
            // 26: review: the trees' shape reads `Tree::depths` and `Tree::size` instead of computing them again; no behaviour changed
            // 27: the fine-tuning step's encoder by hand on the CPU (arbor_models::bert::autodiff and tape): the exact GELU derivative where Burn's differentiates the tanh approximation
            // 28: the reranker's step in the step benchmark (trainers' bench/rerank.rs, `step_flops` over any sides); no behaviour changed
            // 29: the reranker (and its control) train and score each unit's input (`units.context`'s header, then the piece); without headers nothing changes
            // 30: the hand-written step above frozen blocks copies no embedding table; no behaviour changed
            // 31: `training.negatives: Mined` (one document a step, negatives mined from the other training documents) for the dense trainer and SproutRAG's joint step; existing settings unchanged
            // 32: `training.validation: Corpus` (held-out queries read over every validation document's units); the default reading unchanged
            // 33: rows trained with `validation: Corpus` say so in their label; no artefact changed
            // 34: review: the held-out reading groups documents (one, or all) instead of flushing rows; the dense trainer's batches chosen by the setting; no behaviour changed
            // 35: `units.context`'s header is a cut sentence's lines before its first data row (datasets units.rs `table_head`: a statement's title and column row as pdftotext lays them out), not its first line, and no page number as the line before; without `context` nothing changes; the metric columns in one table (eval's scoring/columns.rs); the file helpers in their own crate (files/); SproutRAG's build in parts; every trained method takes units.context headers (the SLLM's SentenceVAE reads each unit's input; the refusal gone); the cut sentences kept (`Segmented::cut`) for `retrieval.whole_sentences`; `DocSpan::contains` and `arbor_files::hex` shared (no behaviour changed)
            // 36: eval's scoring/sentences.rs became parents.rs (`retrieval.hand_on`: whole sentences or paragraphs); `MethodSpec::serve` (`arbor query` through the methods' registry, stored.rs); no behaviour of this kind changed
            // 37: SAC fine-tuned over its document headers (`SummaryChunks((training: Some(..)))`: the dense trainer's `Needs::headers`, `tuned_unit_vectors` with headers, chunks embedded by what the encoder reads); without headers nothing changes; the reranker's examples carry an optional teacher score (serialised only when set) and its control's trainer a MarginMSE objective (`Distill`)
            // 38: `summary` on Dense and SproutRAG (every unit read after its document's summary, SAC's inputs; SproutRAG's control the dense fine-tune over the same summaries; `DocumentSummary` shared by SAC, RSE, Dense and SproutRAG); without it nothing changes; SproutRAG's joint trainer's start and optimizer groups as functions the step benchmark shares (trainers' bench/joint.rs; no behaviour changed)
            // 39: `units.context` by default (64 tokens) for the pieces of a cut *table* only (`units.context_on`: Tables, or CutSentences as before), `Segmented::tables`, `retrieval.hand_on: Tables` by default; a run of more than four digits without a separator is no data row (datasets units.rs `is_data_row`, `is_table`); where no table is cut nothing changes
            // 40: the unit cutter (experiments/src/leaves.rs) and the computing dependencies Cargo.lock pins in every kind's digest, which now keeps import aliases and cuts a test-only field, variant or arm alone (issue 61); no tree changed
            // 41: the document level above the trees (eval tree_retrieval.rs `DocumentLevel`, `Retriever::kept_documents`, the report's `documents_kept`, its named comparators `compare_with`; issue 62); without them nothing changes
            // 42: review: one home for a step's rows of several documents (trainers objective.rs `one_or_cat`), the report's named comparators filtered once (an untrained one meets no row twice), `parents::around` tries a line without copying what it took; eval's `runner::hand_on` (what a method hands on for one query: parents, then the budget) shared by `evaluate` and `arbor query`; no behaviour changed
            // 43: review: one reading of an index's `meta.units` (experiments stored.rs `unit_rule`), the opened index keeps no copy of its rule; no behaviour changed
            // 44: the crate's unit tests moved to its integration binary (tests/integration/unit/), what they call made public (a SAC summary's `header`, SmartChunk's `plan` module, `ById::holds`, ...); no behaviour changed
            // 45: `ARBOR_KERNELS=avx2` (models bert/avx2.rs: gemm's AVX2 + FMA microkernels on a processor with AVX-512, issue 64), gemm-common and gemm-f32 named in the manifests; by default nothing changed
            // 46: the document level above every tree method (eval retrievers/document_level.rs `Scoped`, `DocumentVector::Summary`; RAPTOR's and the heading hierarchy's `documents`; issue 62): SproutRAG's level moved out of tree_retrieval.rs, its rankings unchanged; without a level nothing changes
            // 47: `evaluate` without --from refuses a trained row before loading anything (`Trains::needs_model`, `Training::never_trained`); reproduce's corpus-scope section; no behaviour of this kind changed
            // 48: review: one rule for a header's document name (document_summary `header_name`) and one form of a headed input (chunks `headed`), shared with indexes; the distilled student serves an index; no behaviour of this kind changed
            // 49: the encoder's element-wise passes of the hand-written backward pass at the processor's width and an AVX-512 version of each beside the AVX2 one (models bert/cpu.rs `multiversion!`, following ARBOR_KERNELS; the softmax's loop inside its target features), models/build.rs records the crate's opt-level for the encoder benchmark, the step benchmark over several documents (trainers bench/joint.rs `FixedJointStep`; issues 62 and 64): the same floats, no behaviour changed
            // 50: one refusal of a build slower than users run for the encoder and scale benchmarks (models processor.rs `ensure_release_build`); no behaviour changed
            // 51: the method's serving over a stored index takes the opened index with its encoder and the run's row (methods `Serving`; issue 63: trained SproutRAG rows and rerankers serve `arbor index --from`, sproutrag serve.rs `RowTrees` one home for a row's trees over new documents), SproutRAG's finished model read on any backend (trainers sproutrag `finished`), the reranker's loading in one function (`finished_scorer`); no behaviour changed
            // 52: the host's generator held while a seed draws and the target loads (models host.rs `holding`: two trainings or tests drawing at once each get their own seed's numbers; a test's draws had fallen between another's seeding and drawing); no behaviour changed in one training
            // 53: review: SproutRAG's served trees reuse `rows`, the index's record of a trained row made in one piece (library trained.rs `Servable`); no behaviour changed
            // 54: the methods' serving over a stored index may go through the approximate index it keeps (methods `Serving.neighbours`, Flat's serve; issue 63: `arbor index --approximate`, store approximate.rs); no behaviour changed
            // 55: training.precision (issue 65: bf16 autocast in Burn's BERT forward, models bert precision.rs; the step encoder's precision, trainers encoder.rs `StepEncoder::of`), the CPU build's pass without a graph (GradCache's first) through the inference kernel, the dense trainer's corpus-wide task for the large-batch benchmark (`corpus_task`, bench pairs.rs); float32 steps unchanged, GradCache's first pass on the CPU to float rounding
            // 56: review of the change before: the bf16 tests on burn-flex left out of a build with Burn's collectives (models and trainers `ddp`), the step's bf16 test moved beside the step (trainers dense step.rs); no behaviour changed
            // 57: the bf16 tests marked `#[cfg(test)]` (a test module is no part of a digest), no behaviour changed
            // 58: attention spread over the thread pool by head for long sequences (the same floats), the CPU optimizer fused (trainers' adamw.rs: Burn's AdamW and clipping element by element, the same weights to the clipping norm's rounding)
            // 59: review: FusedAdamW's clip always set, the parallel trainer's AdamW from adamw::config, the skeleton's step_gradients (a step's loss and gradients, cached or plain) shared with the large-batch bench (no behaviour changed)
            // 60: the bench profile's opt-level overrides, which never reached `cargo test --release`, removed from Cargo.toml and the doc comments that named them corrected (models processor.rs); no behaviour changed
            // 61: arbor-ablations compiled at opt-level 0 (the workspace manifest's release profile: its sweeps, tables and verdicts run no model); no behaviour changed
            // 62: `BertLayer::forward_observed` (a block's forward shows each step to an observer; `forward_in` passes none: the same floats) and the forward trace (models bert/trace.rs, `arbor trace-forward`: issue 65's numerics); no behaviour changed
            // 63: a row's name says `bf16 autocast` when it trains so (methods training.rs `in_bf16`), `train` refuses a row this build cannot train before anything trains (run.rs `trainable_here`), two rows of one name refused (experiment.rs); no float32 row's name or artefact changed
            // 64: a row trained on a sample of its split's questions (`train_queries`) says so in its name (methods training.rs `on_a_sample`: Dense, SproutRAG), so that a learning curve's point and a trained row's all-question control are two rows; no artefact changed
            // 65: review: the trace observes `Bert::forward_from_observed` (the encoder's own loop, `forward_from_in` passes no observer: the same floats), `Precision::ensure_supported` one refusal for the trainers, `train` and `arbor trace-forward`, encoder.rs `read_config` shared with the trace; no behaviour changed
            // 66: GradCache in SproutRAG's joint step and in the dense trainer's in-document step (trainers grad_cache.rs: the step's own loss run once over `Vectors::Recording` to find and embed its inputs without a graph, then over `Vectors::Cached`; the dense corpus-wide step's cache now the same code, its gradient the same to rounding), `training.grad_cache` with any batches on arbor's own loop, a row's name says GradCache when it is set; `train` refuses a DDP row on a build without `ddp` before anything trains (run.rs `trainable_here`, trainers strategy.rs `ensure_supported`)
            // 67: review: GradCache's step takes the step encoder and the fine-tuned weights itself (the two trainers' copies of its embedding closures gone), each chunk's rows derived from the recorded rows instead of a second copy of their ids; the same floats
            // 68: the `flex` feature (burn-flex as the backend, models/src/backend.rs) and the bf16 refusal naming it; the default build's floats unchanged
            // 69: the encoder families by config.json's `model_type` (models bert/families: BERT, RoBERTa, XLM-RoBERTa, MPNet; offset positions, no token types, MPNet's relative position bias in every kernel and its gradient), the CPU kernel's attention in its own file (bert/attention.rs); a BERT encoder's floats unchanged
            // 70: a randomly initialised encoder of a family from its config.json (models bert/init.rs, `arbor init-model`) and `encoder::vocabulary_size`; no behaviour changed
            // 71: issue 86: every key names the backend (cache `versioned_under`: the flex, ndarray and CUDA builds share no artefact), the digest reads every manifest's asks and features (digest 5), `Retriever: Send + Sync` for the server's pool, the matched control keeps the row's precision, SproutRAG's document term leaves out a document holding the query's gold, models record sketches of what they trained on
            Artefact::Trees => 71,
            // 3: validation embeds the fine-tuned encoder by the inference kernel; `frozen_layers`; 4: the
            // skeleton refuses `schedule.data_parallel: Ddp`. Every trained kind went up by one when its digest
            // came to reach every file the code names, a damaged `state.json` came to be read as no
            // checkpoint, models came to record what they trained on (`trained_on`), and the dense control's
            // windowed step came to score every unit of its document as SproutRAG's does.
            // 6: the reranker's control became its own training's bi-encoder twin (every kind reaching the methods' registry)
            // 7: `training.min_steps`, the planner's control reading the planner's own training
            // 8: the shared objective (L_ret, the held-out reading) moved into trainers' objective.rs
            // 9: the schedule's floor of steps in one place (`Schedule::at_least`); no behaviour changed
            // 10: `training.negatives` (batches across documents, negatives mined from the training split: trainers' negatives.rs), a training query's text, unit ids read as the encoder reads them, GradCache (`training.grad_cache`), the planner's control batched across documents
            // 11: GradCache takes each side's rows in order of length (chunks pad less); no other behaviour changed
            // 12: review: mining builds no index for in-batch negatives only and computes each unit's norm once; no behaviour changed
            // 13: the skeleton's AdamW in one function (`skeleton::optimizer`, which the step benchmark reads too) and the run's set-up in `run::prepare`; no behaviour changed
            // 14: review: one dot product in the trainers (window.rs's, which mining now calls too) and one home for a window's rows (`encoder::window_rows`); no behaviour changed
            // 15: random numbers drawn on the host (arbor_models::host: initial weights, VAE noise), so a GPU build trains what the CPU build trains; a CPU build draws what it drew before
            // 16: the run loads its encoder through arbor_models::pipeline::load (a folder whose sentence-transformers pipeline is not arbor's is refused); no behaviour changed
            // 17: files split so that they import downwards (trainers dense/step.rs and sproutrag/step.rs, the reranker's training_examples.rs, utc_stamp in provenance.rs); no behaviour changed
            // 18: the query-trained trainers' start (settings checked, a training query, the seed) in one function, objective::start; no behaviour changed
            // 19: pooling and prompts as encoder settings (arbor_models::pooling): none by default, so a default encoder's vectors do not change
            // 20: the trees' shape (eval's tree_shape: depth, balance, contiguity) in the SproutRAG rows' report line; no artefact changed
            // 21: the linkage rule of SproutRAG's trees (eval's linkage: single by default, average, complete, adjacent); single linkage's trees unchanged
            // 22: the trees' shape reported through `Retriever::tree_shape` (report.json, arbor inspect); no artefact changed
            // 23: review: the trees' shape reads `Tree::depths` and `Tree::size` instead of computing them again; no behaviour changed
            // 24: the fine-tuning step's encoder by hand on the CPU (arbor_models::bert::autodiff and tape): the exact GELU derivative where Burn's differentiates the tanh approximation
            // 25: the reranker's step in the step benchmark (trainers' bench/rerank.rs, `step_flops` over any sides); no behaviour changed
            // 26: the reranker (and its control) train and score each unit's input (`units.context`'s header, then the piece); without headers nothing changes
            // 27: the hand-written step above frozen blocks copies no embedding table; no behaviour changed
            // 28: `training.negatives: Mined` (one document a step, negatives mined from the other training documents) for the dense trainer and SproutRAG's joint step; existing settings unchanged
            // 29: `training.validation: Corpus` (held-out queries read over every validation document's units); the default reading unchanged
            // 30: rows trained with `validation: Corpus` say so in their label; no artefact changed
            // 31: review: the held-out reading groups documents (one, or all) instead of flushing rows; the dense trainer's batches chosen by the setting; no behaviour changed
            // 32: `units.context`'s header is a cut sentence's lines before its first data row (datasets units.rs `table_head`: a statement's title and column row as pdftotext lays them out), not its first line, and no page number as the line before; without `context` nothing changes; the metric columns in one table (eval's scoring/columns.rs); the file helpers in their own crate (files/); SproutRAG's build in parts; every trained method takes units.context headers (the SLLM's SentenceVAE reads each unit's input; the refusal gone); the cut sentences kept (`Segmented::cut`) for `retrieval.whole_sentences`; `DocSpan::contains` and `arbor_files::hex` shared (no behaviour changed)
            // 33: eval's scoring/sentences.rs became parents.rs (`retrieval.hand_on`: whole sentences or paragraphs); `MethodSpec::serve` (`arbor query` through the methods' registry, stored.rs); no behaviour of this kind changed
            // 34: SAC fine-tuned over its document headers (`SummaryChunks((training: Some(..)))`: the dense trainer's `Needs::headers`, `tuned_unit_vectors` with headers, chunks embedded by what the encoder reads); without headers nothing changes; the reranker's examples carry an optional teacher score (serialised only when set) and its control's trainer a MarginMSE objective (`Distill`)
            // 35: `summary` on Dense and SproutRAG (every unit read after its document's summary, SAC's inputs; SproutRAG's control the dense fine-tune over the same summaries; `DocumentSummary` shared by SAC, RSE, Dense and SproutRAG); without it nothing changes; SproutRAG's joint trainer's start and optimizer groups as functions the step benchmark shares (trainers' bench/joint.rs; no behaviour changed)
            // 36: `units.context` by default (64 tokens) for the pieces of a cut *table* only (`units.context_on`: Tables, or CutSentences as before), `Segmented::tables`, `retrieval.hand_on: Tables` by default; a run of more than four digits without a separator is no data row (datasets units.rs `is_data_row`, `is_table`); where no table is cut nothing changes
            // 37: the unit cutter (experiments/src/leaves.rs) and the computing dependencies Cargo.lock pins in every kind's digest, which now keeps import aliases and cuts a test-only field, variant or arm alone (issue 61); the head weights' targets from the training's own sample of questions (`train_queries`), not every question of the split
            // 38: the document level above the trees (eval tree_retrieval.rs `DocumentLevel`, `Retriever::kept_documents`, the report's `documents_kept`, its named comparators `compare_with`; issue 62); without them nothing changes
            // 39: review: one home for a step's rows of several documents (trainers objective.rs `one_or_cat`), the report's named comparators filtered once (an untrained one meets no row twice), `parents::around` tries a line without copying what it took; eval's `runner::hand_on` (what a method hands on for one query: parents, then the budget) shared by `evaluate` and `arbor query`; no behaviour changed
            // 40: review: one reading of an index's `meta.units` (experiments stored.rs `unit_rule`), the opened index keeps no copy of its rule; no behaviour changed
            // 41: the crate's unit tests moved to its integration binary (tests/integration/unit/), what they call made public (a SAC summary's `header`, SmartChunk's `plan` module, `ById::holds`, ...); no behaviour changed
            // 42: `ARBOR_KERNELS=avx2` (models bert/avx2.rs: gemm's AVX2 + FMA microkernels on a processor with AVX-512, issue 64), gemm-common and gemm-f32 named in the manifests; by default nothing changed
            // 43: the document level above every tree method (eval retrievers/document_level.rs `Scoped`, `DocumentVector::Summary`; RAPTOR's and the heading hierarchy's `documents`; issue 62): SproutRAG's level moved out of tree_retrieval.rs, its rankings unchanged; without a level nothing changes
            // 44: `evaluate` without --from refuses a trained row before loading anything (`Trains::needs_model`, `Training::never_trained`); reproduce's corpus-scope section; no behaviour of this kind changed
            // 45: review: one rule for a header's document name (document_summary `header_name`) and one form of a headed input (chunks `headed`), shared with indexes; the distilled student serves an index; no behaviour of this kind changed
            // 46: the encoder's element-wise passes of the hand-written backward pass at the processor's width and an AVX-512 version of each beside the AVX2 one (models bert/cpu.rs `multiversion!`, following ARBOR_KERNELS; the softmax's loop inside its target features), models/build.rs records the crate's opt-level for the encoder benchmark, the step benchmark over several documents (trainers bench/joint.rs `FixedJointStep`; issues 62 and 64): the same floats, no behaviour changed
            // 47: one refusal of a build slower than users run for the encoder and scale benchmarks (models processor.rs `ensure_release_build`); no behaviour changed
            // 48: the method's serving over a stored index takes the opened index with its encoder and the run's row (methods `Serving`; issue 63: trained SproutRAG rows and rerankers serve `arbor index --from`, sproutrag serve.rs `RowTrees` one home for a row's trees over new documents), SproutRAG's finished model read on any backend (trainers sproutrag `finished`), the reranker's loading in one function (`finished_scorer`); no behaviour changed
            // 49: the host's generator held while a seed draws and the target loads (models host.rs `holding`: two trainings or tests drawing at once each get their own seed's numbers; a test's draws had fallen between another's seeding and drawing); no behaviour changed in one training
            // 50: review: SproutRAG's served trees reuse `rows`, the index's record of a trained row made in one piece (library trained.rs `Servable`); no behaviour changed
            // 51: the methods' serving over a stored index may go through the approximate index it keeps (methods `Serving.neighbours`, Flat's serve; issue 63: `arbor index --approximate`, store approximate.rs); no behaviour changed
            // 52: training.precision (issue 65: bf16 autocast in Burn's BERT forward, models bert precision.rs; the step encoder's precision, trainers encoder.rs `StepEncoder::of`), the CPU build's pass without a graph (GradCache's first) through the inference kernel, the dense trainer's corpus-wide task for the large-batch benchmark (`corpus_task`, bench pairs.rs); float32 steps unchanged, GradCache's first pass on the CPU to float rounding
            // 53: review of the change before: the bf16 tests on burn-flex left out of a build with Burn's collectives (models and trainers `ddp`), the step's bf16 test moved beside the step (trainers dense step.rs); no behaviour changed
            // 54: the bf16 tests marked `#[cfg(test)]` (a test module is no part of a digest), no behaviour changed
            // 55: attention spread over the thread pool by head for long sequences (the same floats), the CPU optimizer fused (trainers' adamw.rs: Burn's AdamW and clipping element by element, the same weights to the clipping norm's rounding)
            // 56: review: FusedAdamW's clip always set, the parallel trainer's AdamW from adamw::config, the skeleton's step_gradients (a step's loss and gradients, cached or plain) shared with the large-batch bench (no behaviour changed)
            // 57: the bench profile's opt-level overrides, which never reached `cargo test --release`, removed from Cargo.toml and the doc comments that named them corrected (models processor.rs); no behaviour changed
            // 58: arbor-ablations compiled at opt-level 0 (the workspace manifest's release profile: its sweeps, tables and verdicts run no model); no behaviour changed
            // 59: `BertLayer::forward_observed` (a block's forward shows each step to an observer; `forward_in` passes none: the same floats) and the forward trace (models bert/trace.rs, `arbor trace-forward`: issue 65's numerics); no behaviour changed
            // 60: a row's name says `bf16 autocast` when it trains so (methods training.rs `in_bf16`), `train` refuses a row this build cannot train before anything trains (run.rs `trainable_here`), two rows of one name refused (experiment.rs); no float32 row's name or artefact changed
            // 61: a row trained on a sample of its split's questions (`train_queries`) says so in its name (methods training.rs `on_a_sample`: Dense, SproutRAG), so that a learning curve's point and a trained row's all-question control are two rows; no artefact changed
            // 62: review: the trace observes `Bert::forward_from_observed` (the encoder's own loop, `forward_from_in` passes no observer: the same floats), `Precision::ensure_supported` one refusal for the trainers, `train` and `arbor trace-forward`, encoder.rs `read_config` shared with the trace; no behaviour changed
            // 63: GradCache in SproutRAG's joint step and in the dense trainer's in-document step (trainers grad_cache.rs: the step's own loss run once over `Vectors::Recording` to find and embed its inputs without a graph, then over `Vectors::Cached`; the dense corpus-wide step's cache now the same code, its gradient the same to rounding), `training.grad_cache` with any batches on arbor's own loop, a row's name says GradCache when it is set; `train` refuses a DDP row on a build without `ddp` before anything trains (run.rs `trainable_here`, trainers strategy.rs `ensure_supported`)
            // 64: review: GradCache's step takes the step encoder and the fine-tuned weights itself (the two trainers' copies of its embedding closures gone), each chunk's rows derived from the recorded rows instead of a second copy of their ids; the same floats
            // 65: the `flex` feature (burn-flex as the backend, models/src/backend.rs) and the bf16 refusal naming it; the default build's floats unchanged
            // 66: the encoder families by config.json's `model_type` (models bert/families: BERT, RoBERTa, XLM-RoBERTa, MPNet; offset positions, no token types, MPNet's relative position bias in every kernel and its gradient), the CPU kernel's attention in its own file (bert/attention.rs); a BERT encoder's floats unchanged
            // 67: a randomly initialised encoder of a family from its config.json (models bert/init.rs, `arbor init-model`) and `encoder::vocabulary_size`; no behaviour changed
            // 68: issue 86: every key names the backend (cache `versioned_under`: the flex, ndarray and CUDA builds share no artefact), the digest reads every manifest's asks and features (digest 5), `Retriever: Send + Sync` for the server's pool, the matched control keeps the row's precision, SproutRAG's document term leaves out a document holding the query's gold, models record sketches of what they trained on
            Artefact::HeadWeights => 68,
            // 5: `train_queries`, the sample every trainer draws (its matched control's too), for `max_queries`;
            // the control's regime (`control`).
            // 7: the reranker's control became its own training's bi-encoder twin (every kind reaching the methods' registry)
            // 8: `training.min_steps`, the planner's control reading the planner's own training
            // 9: the shared objective (L_ret, the held-out reading) moved into trainers' objective.rs
            // 10: the schedule's floor of steps in one place (`Schedule::at_least`); no behaviour changed
            // 11: `training.negatives` (batches across documents, negatives mined from the training split: trainers' negatives.rs), a training query's text, unit ids read as the encoder reads them, GradCache (`training.grad_cache`), the planner's control batched across documents
            // 12: GradCache takes each side's rows in order of length (chunks pad less); no other behaviour changed
            // 13: review: mining builds no index for in-batch negatives only and computes each unit's norm once; no behaviour changed
            // 14: the skeleton's AdamW in one function (`skeleton::optimizer`, which the step benchmark reads too) and the run's set-up in `run::prepare`; no behaviour changed
            // 15: review: one dot product in the trainers (window.rs's, which mining now calls too) and one home for a window's rows (`encoder::window_rows`); no behaviour changed
            // 16: random numbers drawn on the host (arbor_models::host: initial weights, VAE noise), so a GPU build trains what the CPU build trains; a CPU build draws what it drew before
            // 17: the run loads its encoder through arbor_models::pipeline::load (a folder whose sentence-transformers pipeline is not arbor's is refused); no behaviour changed
            // 18: files split so that they import downwards (trainers dense/step.rs and sproutrag/step.rs, the reranker's training_examples.rs, utc_stamp in provenance.rs); no behaviour changed
            // 19: the query-trained trainers' start (settings checked, a training query, the seed) in one function, objective::start; no behaviour changed
            // 20: pooling and prompts as encoder settings (arbor_models::pooling): none by default, so a default encoder's vectors do not change
            // 21: the trees' shape (eval's tree_shape: depth, balance, contiguity) in the SproutRAG rows' report line; no artefact changed
            // 22: the linkage rule of SproutRAG's trees (eval's linkage: single by default, average, complete, adjacent); single linkage's trees unchanged
            // 23: the trees' shape reported through `Retriever::tree_shape` (report.json, arbor inspect); no artefact changed
            // 24: review: the trees' shape reads `Tree::depths` and `Tree::size` instead of computing them again; no behaviour changed
            // 25: the fine-tuning step's encoder by hand on the CPU (arbor_models::bert::autodiff and tape): the exact GELU derivative where Burn's differentiates the tanh approximation
            // 26: the reranker's step in the step benchmark (trainers' bench/rerank.rs, `step_flops` over any sides); no behaviour changed
            // 27: the reranker (and its control) train and score each unit's input (`units.context`'s header, then the piece); without headers nothing changes
            // 28: the hand-written step above frozen blocks copies no embedding table; no behaviour changed
            // 29: `training.negatives: Mined` (one document a step, negatives mined from the other training documents) for the dense trainer and SproutRAG's joint step; existing settings unchanged
            // 30: `training.validation: Corpus` (held-out queries read over every validation document's units); the default reading unchanged
            // 31: rows trained with `validation: Corpus` say so in their label; no artefact changed
            // 32: review: the held-out reading groups documents (one, or all) instead of flushing rows; the dense trainer's batches chosen by the setting; no behaviour changed
            // 33: `units.context`'s header is a cut sentence's lines before its first data row (datasets units.rs `table_head`: a statement's title and column row as pdftotext lays them out), not its first line, and no page number as the line before; without `context` nothing changes; the metric columns in one table (eval's scoring/columns.rs); the file helpers in their own crate (files/); SproutRAG's build in parts; every trained method takes units.context headers (the SLLM's SentenceVAE reads each unit's input; the refusal gone); the cut sentences kept (`Segmented::cut`) for `retrieval.whole_sentences`; `DocSpan::contains` and `arbor_files::hex` shared (no behaviour changed)
            // 34: eval's scoring/sentences.rs became parents.rs (`retrieval.hand_on`: whole sentences or paragraphs); `MethodSpec::serve` (`arbor query` through the methods' registry, stored.rs); no behaviour of this kind changed
            // 35: SAC fine-tuned over its document headers (`SummaryChunks((training: Some(..)))`: the dense trainer's `Needs::headers`, `tuned_unit_vectors` with headers, chunks embedded by what the encoder reads); without headers nothing changes; the reranker's examples carry an optional teacher score (serialised only when set) and its control's trainer a MarginMSE objective (`Distill`)
            // 36: `summary` on Dense and SproutRAG (every unit read after its document's summary, SAC's inputs; SproutRAG's control the dense fine-tune over the same summaries; `DocumentSummary` shared by SAC, RSE, Dense and SproutRAG); without it nothing changes; SproutRAG's joint trainer's start and optimizer groups as functions the step benchmark shares (trainers' bench/joint.rs; no behaviour changed)
            // 37: `units.context` by default (64 tokens) for the pieces of a cut *table* only (`units.context_on`: Tables, or CutSentences as before), `Segmented::tables`, `retrieval.hand_on: Tables` by default; a run of more than four digits without a separator is no data row (datasets units.rs `is_data_row`, `is_table`); where no table is cut nothing changes
            // 38: the unit cutter (experiments/src/leaves.rs) and the computing dependencies Cargo.lock pins in every kind's digest, which now keeps import aliases and cuts a test-only field, variant or arm alone (issue 61); no behaviour of this kind changed
            // 39: the document level above the trees (eval tree_retrieval.rs `DocumentLevel`, `Retriever::kept_documents`, the report's `documents_kept`, its named comparators `compare_with`; issue 62); without them nothing changes; the trainers' step over several documents (`docs_per_step`), not read by this kind
            // 40: review: one home for a step's rows of several documents (trainers objective.rs `one_or_cat`), the report's named comparators filtered once (an untrained one meets no row twice), `parents::around` tries a line without copying what it took; eval's `runner::hand_on` (what a method hands on for one query: parents, then the budget) shared by `evaluate` and `arbor query`; no behaviour changed
            // 41: review: one reading of an index's `meta.units` (experiments stored.rs `unit_rule`), the opened index keeps no copy of its rule; no behaviour changed
            // 42: the crate's unit tests moved to its integration binary (tests/integration/unit/), what they call made public (a SAC summary's `header`, SmartChunk's `plan` module, `ById::holds`, ...); no behaviour changed
            // 43: `ARBOR_KERNELS=avx2` (models bert/avx2.rs: gemm's AVX2 + FMA microkernels on a processor with AVX-512, issue 64), gemm-common and gemm-f32 named in the manifests; by default nothing changed
            // 44: the document level above every tree method (eval retrievers/document_level.rs `Scoped`, `DocumentVector::Summary`; RAPTOR's and the heading hierarchy's `documents`; issue 62): SproutRAG's level moved out of tree_retrieval.rs, its rankings unchanged; without a level nothing changes
            // 45: `evaluate` without --from refuses a trained row before loading anything (`Trains::needs_model`, `Training::never_trained`); reproduce's corpus-scope section; no behaviour of this kind changed
            // 46: review: one rule for a header's document name (document_summary `header_name`) and one form of a headed input (chunks `headed`), shared with indexes; the distilled student serves an index; no behaviour of this kind changed
            // 47: the encoder's element-wise passes of the hand-written backward pass at the processor's width and an AVX-512 version of each beside the AVX2 one (models bert/cpu.rs `multiversion!`, following ARBOR_KERNELS; the softmax's loop inside its target features), models/build.rs records the crate's opt-level for the encoder benchmark, the step benchmark over several documents (trainers bench/joint.rs `FixedJointStep`; issues 62 and 64): the same floats, no behaviour changed
            // 48: one refusal of a build slower than users run for the encoder and scale benchmarks (models processor.rs `ensure_release_build`); no behaviour changed
            // 49: the method's serving over a stored index takes the opened index with its encoder and the run's row (methods `Serving`; issue 63: trained SproutRAG rows and rerankers serve `arbor index --from`, sproutrag serve.rs `RowTrees` one home for a row's trees over new documents), SproutRAG's finished model read on any backend (trainers sproutrag `finished`), the reranker's loading in one function (`finished_scorer`); no behaviour changed
            // 50: the host's generator held while a seed draws and the target loads (models host.rs `holding`: two trainings or tests drawing at once each get their own seed's numbers; a test's draws had fallen between another's seeding and drawing); no behaviour changed in one training
            // 51: review: SproutRAG's served trees reuse `rows`, the index's record of a trained row made in one piece (library trained.rs `Servable`); no behaviour changed
            // 52: the methods' serving over a stored index may go through the approximate index it keeps (methods `Serving.neighbours`, Flat's serve; issue 63: `arbor index --approximate`, store approximate.rs); no behaviour changed
            // 53: training.precision (issue 65: bf16 autocast in Burn's BERT forward, models bert precision.rs; the step encoder's precision, trainers encoder.rs `StepEncoder::of`), the CPU build's pass without a graph (GradCache's first) through the inference kernel, the dense trainer's corpus-wide task for the large-batch benchmark (`corpus_task`, bench pairs.rs); float32 steps unchanged, GradCache's first pass on the CPU to float rounding
            // 54: review of the change before: the bf16 tests on burn-flex left out of a build with Burn's collectives (models and trainers `ddp`), the step's bf16 test moved beside the step (trainers dense step.rs); no behaviour changed
            // 55: the bf16 tests marked `#[cfg(test)]` (a test module is no part of a digest), no behaviour changed
            // 56: attention spread over the thread pool by head for long sequences (the same floats), the CPU optimizer fused (trainers' adamw.rs: Burn's AdamW and clipping element by element, the same weights to the clipping norm's rounding)
            // 57: review: FusedAdamW's clip always set, the parallel trainer's AdamW from adamw::config, the skeleton's step_gradients (a step's loss and gradients, cached or plain) shared with the large-batch bench (no behaviour changed)
            // 58: the bench profile's opt-level overrides, which never reached `cargo test --release`, removed from Cargo.toml and the doc comments that named them corrected (models processor.rs); no behaviour changed
            // 59: arbor-ablations compiled at opt-level 0 (the workspace manifest's release profile: its sweeps, tables and verdicts run no model); no behaviour changed
            // 60: `BertLayer::forward_observed` (a block's forward shows each step to an observer; `forward_in` passes none: the same floats) and the forward trace (models bert/trace.rs, `arbor trace-forward`: issue 65's numerics); no behaviour changed
            // 61: a row's name says `bf16 autocast` when it trains so (methods training.rs `in_bf16`), `train` refuses a row this build cannot train before anything trains (run.rs `trainable_here`), two rows of one name refused (experiment.rs); no float32 row's name or artefact changed
            // 62: a row trained on a sample of its split's questions (`train_queries`) says so in its name (methods training.rs `on_a_sample`: Dense, SproutRAG), so that a learning curve's point and a trained row's all-question control are two rows; no artefact changed
            // 63: review: the trace observes `Bert::forward_from_observed` (the encoder's own loop, `forward_from_in` passes no observer: the same floats), `Precision::ensure_supported` one refusal for the trainers, `train` and `arbor trace-forward`, encoder.rs `read_config` shared with the trace; no behaviour changed
            // 64: GradCache in SproutRAG's joint step and in the dense trainer's in-document step (trainers grad_cache.rs: the step's own loss run once over `Vectors::Recording` to find and embed its inputs without a graph, then over `Vectors::Cached`; the dense corpus-wide step's cache now the same code, its gradient the same to rounding), `training.grad_cache` with any batches on arbor's own loop, a row's name says GradCache when it is set; `train` refuses a DDP row on a build without `ddp` before anything trains (run.rs `trainable_here`, trainers strategy.rs `ensure_supported`)
            // 65: review: GradCache's step takes the step encoder and the fine-tuned weights itself (the two trainers' copies of its embedding closures gone), each chunk's rows derived from the recorded rows instead of a second copy of their ids; the same floats
            // 66: the `flex` feature (burn-flex as the backend, models/src/backend.rs) and the bf16 refusal naming it; the default build's floats unchanged
            // 67: the encoder families by config.json's `model_type` (models bert/families: BERT, RoBERTa, XLM-RoBERTa, MPNet; offset positions, no token types, MPNet's relative position bias in every kernel and its gradient), the CPU kernel's attention in its own file (bert/attention.rs); a BERT encoder's floats unchanged
            // 68: a randomly initialised encoder of a family from its config.json (models bert/init.rs, `arbor init-model`) and `encoder::vocabulary_size`; no behaviour changed
            // 69: issue 86: every key names the backend (cache `versioned_under`: the flex, ndarray and CUDA builds share no artefact), the digest reads every manifest's asks and features (digest 5), `Retriever: Send + Sync` for the server's pool, the matched control keeps the row's precision, SproutRAG's document term leaves out a document holding the query's gold, models record sketches of what they trained on
            Artefact::Reranker => 69,
            // 4: the sampled step's code (trainers' encoder.rs and window.rs) listed among the sources;
            // 5: `schedule.devices` trains on the Learner (trainers' parallel/); 6: `parallel::Data`; 7: a
            // Learner run rerun after its last epoch still keeps the epoch validation chose; 8: the Learner's
            // execution strategy from `schedule.data_parallel` (trainers' strategy.rs); 9: the training
            // sample drawn by `training::sample`, shared with the reranker.
            // 11: the reranker's control became its own training's bi-encoder twin (every kind reaching the methods' registry)
            // 12: `training.min_steps`, the planner's control reading the planner's own training
            // 13: the shared objective (L_ret, the held-out reading) moved into trainers' objective.rs
            // 14: the schedule's floor of steps in one place (`Schedule::at_least`); no behaviour changed
            // 15: `training.negatives` (batches across documents, negatives mined from the training split: trainers' negatives.rs), a training query's text, unit ids read as the encoder reads them, GradCache (`training.grad_cache`), the planner's control batched across documents
            // 16: GradCache takes each side's rows in order of length (chunks pad less); no other behaviour changed
            // 17: review: mining builds no index for in-batch negatives only and computes each unit's norm once; no behaviour changed
            // 18: the skeleton's AdamW in one function (`skeleton::optimizer`, which the step benchmark reads too) and the run's set-up in `run::prepare`; no behaviour changed
            // 19: review: one dot product in the trainers (window.rs's, which mining now calls too) and one home for a window's rows (`encoder::window_rows`); no behaviour changed
            // 20: random numbers drawn on the host (arbor_models::host: initial weights, VAE noise), so a GPU build trains what the CPU build trains; a CPU build draws what it drew before
            // 21: the run loads its encoder through arbor_models::pipeline::load (a folder whose sentence-transformers pipeline is not arbor's is refused); no behaviour changed
            // 22: files split so that they import downwards (trainers dense/step.rs and sproutrag/step.rs, the reranker's training_examples.rs, utc_stamp in provenance.rs); no behaviour changed
            // 23: the query-trained trainers' start (settings checked, a training query, the seed) in one function, objective::start; no behaviour changed
            // 24: pooling and prompts as encoder settings (arbor_models::pooling): none by default, so a default encoder's vectors do not change
            // 25: the trees' shape (eval's tree_shape: depth, balance, contiguity) in the SproutRAG rows' report line; no artefact changed
            // 26: the linkage rule of SproutRAG's trees (eval's linkage: single by default, average, complete, adjacent); single linkage's trees unchanged
            // 27: the trees' shape reported through `Retriever::tree_shape` (report.json, arbor inspect); no artefact changed
            // 28: review: the trees' shape reads `Tree::depths` and `Tree::size` instead of computing them again; no behaviour changed
            // 29: the fine-tuning step's encoder by hand on the CPU (arbor_models::bert::autodiff and tape): the exact GELU derivative where Burn's differentiates the tanh approximation
            // 30: the reranker's step in the step benchmark (trainers' bench/rerank.rs, `step_flops` over any sides); no behaviour changed
            // 31: the reranker (and its control) train and score each unit's input (`units.context`'s header, then the piece); without headers nothing changes
            // 32: the hand-written step above frozen blocks copies no embedding table; no behaviour changed
            // 33: `training.negatives: Mined` (one document a step, negatives mined from the other training documents) for the dense trainer and SproutRAG's joint step; existing settings unchanged
            // 34: `training.validation: Corpus` (held-out queries read over every validation document's units); the default reading unchanged
            // 35: rows trained with `validation: Corpus` say so in their label; no artefact changed
            // 36: review: the held-out reading groups documents (one, or all) instead of flushing rows; the dense trainer's batches chosen by the setting; no behaviour changed
            // 37: `units.context`'s header is a cut sentence's lines before its first data row (datasets units.rs `table_head`: a statement's title and column row as pdftotext lays them out), not its first line, and no page number as the line before; without `context` nothing changes; the metric columns in one table (eval's scoring/columns.rs); the file helpers in their own crate (files/); SproutRAG's build in parts; every trained method takes units.context headers (the SLLM's SentenceVAE reads each unit's input; the refusal gone); the cut sentences kept (`Segmented::cut`) for `retrieval.whole_sentences`; `DocSpan::contains` and `arbor_files::hex` shared (no behaviour changed)
            // 38: eval's scoring/sentences.rs became parents.rs (`retrieval.hand_on`: whole sentences or paragraphs); `MethodSpec::serve` (`arbor query` through the methods' registry, stored.rs); no behaviour of this kind changed
            // 39: SAC fine-tuned over its document headers (`SummaryChunks((training: Some(..)))`: the dense trainer's `Needs::headers`, `tuned_unit_vectors` with headers, chunks embedded by what the encoder reads); without headers nothing changes; the reranker's examples carry an optional teacher score (serialised only when set) and its control's trainer a MarginMSE objective (`Distill`)
            // 40: `summary` on Dense and SproutRAG (every unit read after its document's summary, SAC's inputs; SproutRAG's control the dense fine-tune over the same summaries; `DocumentSummary` shared by SAC, RSE, Dense and SproutRAG); without it nothing changes; SproutRAG's joint trainer's start and optimizer groups as functions the step benchmark shares (trainers' bench/joint.rs; no behaviour changed)
            // 41: `units.context` by default (64 tokens) for the pieces of a cut *table* only (`units.context_on`: Tables, or CutSentences as before), `Segmented::tables`, `retrieval.hand_on: Tables` by default; a run of more than four digits without a separator is no data row (datasets units.rs `is_data_row`, `is_table`); where no table is cut nothing changes
            // 42: the unit cutter (experiments/src/leaves.rs) and the computing dependencies Cargo.lock pins in every kind's digest, which now keeps import aliases and cuts a test-only field, variant or arm alone (issue 61); the merge pairs from the training's own sample (`train_queries`); an in-document step's false negatives (a unit of the query's gold, a shared positive, a mined unit of its gold) left out of its denominator
            // 43: SproutRAG's joint step over `docs_per_step` documents (L_ret over all their units, L_attn, L_node and the VAE's terms averaged per document; one document is the paper's step exactly), the document term `doc_loss`, the document level above the trees (issue 62); with neither set nothing changes
            // 44: review: one home for a step's rows of several documents (trainers objective.rs `one_or_cat`), the report's named comparators filtered once (an untrained one meets no row twice), `parents::around` tries a line without copying what it took; eval's `runner::hand_on` (what a method hands on for one query: parents, then the budget) shared by `evaluate` and `arbor query`; no behaviour changed
            // 45: review: one reading of an index's `meta.units` (experiments stored.rs `unit_rule`), the opened index keeps no copy of its rule; no behaviour changed
            // 46: the crate's unit tests moved to its integration binary (tests/integration/unit/), what they call made public (a SAC summary's `header`, SmartChunk's `plan` module, `ById::holds`, ...); no behaviour changed
            // 47: `ARBOR_KERNELS=avx2` (models bert/avx2.rs: gemm's AVX2 + FMA microkernels on a processor with AVX-512, issue 64), gemm-common and gemm-f32 named in the manifests; by default nothing changed
            // 48: the document level above every tree method (eval retrievers/document_level.rs `Scoped`, `DocumentVector::Summary`; RAPTOR's and the heading hierarchy's `documents`; issue 62): SproutRAG's level moved out of tree_retrieval.rs, its rankings unchanged; without a level nothing changes
            // 49: `evaluate` without --from refuses a trained row before loading anything (`Trains::needs_model`, `Training::never_trained`); reproduce's corpus-scope section; no behaviour of this kind changed
            // 50: review: one rule for a header's document name (document_summary `header_name`) and one form of a headed input (chunks `headed`), shared with indexes; the distilled student serves an index; no behaviour of this kind changed
            // 51: the encoder's element-wise passes of the hand-written backward pass at the processor's width and an AVX-512 version of each beside the AVX2 one (models bert/cpu.rs `multiversion!`, following ARBOR_KERNELS; the softmax's loop inside its target features), models/build.rs records the crate's opt-level for the encoder benchmark, the step benchmark over several documents (trainers bench/joint.rs `FixedJointStep`; issues 62 and 64): the same floats, no behaviour changed
            // 52: one refusal of a build slower than users run for the encoder and scale benchmarks (models processor.rs `ensure_release_build`); no behaviour changed
            // 53: the method's serving over a stored index takes the opened index with its encoder and the run's row (methods `Serving`; issue 63: trained SproutRAG rows and rerankers serve `arbor index --from`, sproutrag serve.rs `RowTrees` one home for a row's trees over new documents), SproutRAG's finished model read on any backend (trainers sproutrag `finished`), the reranker's loading in one function (`finished_scorer`); no behaviour changed
            // 54: the host's generator held while a seed draws and the target loads (models host.rs `holding`: two trainings or tests drawing at once each get their own seed's numbers; a test's draws had fallen between another's seeding and drawing); no behaviour changed in one training
            // 55: review: SproutRAG's served trees reuse `rows`, the index's record of a trained row made in one piece (library trained.rs `Servable`); no behaviour changed
            // 56: the methods' serving over a stored index may go through the approximate index it keeps (methods `Serving.neighbours`, Flat's serve; issue 63: `arbor index --approximate`, store approximate.rs); no behaviour changed
            // 57: training.precision (issue 65: bf16 autocast in Burn's BERT forward, models bert precision.rs; the step encoder's precision, trainers encoder.rs `StepEncoder::of`), the CPU build's pass without a graph (GradCache's first) through the inference kernel, the dense trainer's corpus-wide task for the large-batch benchmark (`corpus_task`, bench pairs.rs); float32 steps unchanged, GradCache's first pass on the CPU to float rounding
            // 58: review of the change before: the bf16 tests on burn-flex left out of a build with Burn's collectives (models and trainers `ddp`), the step's bf16 test moved beside the step (trainers dense step.rs); no behaviour changed
            // 59: the bf16 tests marked `#[cfg(test)]` (a test module is no part of a digest), no behaviour changed
            // 60: attention spread over the thread pool by head for long sequences (the same floats), the CPU optimizer fused (trainers' adamw.rs: Burn's AdamW and clipping element by element, the same weights to the clipping norm's rounding)
            // 61: review: FusedAdamW's clip always set, the parallel trainer's AdamW from adamw::config, the skeleton's step_gradients (a step's loss and gradients, cached or plain) shared with the large-batch bench (no behaviour changed)
            // 62: the bench profile's opt-level overrides, which never reached `cargo test --release`, removed from Cargo.toml and the doc comments that named them corrected (models processor.rs); no behaviour changed
            // 63: arbor-ablations compiled at opt-level 0 (the workspace manifest's release profile: its sweeps, tables and verdicts run no model); no behaviour changed
            // 64: `BertLayer::forward_observed` (a block's forward shows each step to an observer; `forward_in` passes none: the same floats) and the forward trace (models bert/trace.rs, `arbor trace-forward`: issue 65's numerics); no behaviour changed
            // 65: a row's name says `bf16 autocast` when it trains so (methods training.rs `in_bf16`), `train` refuses a row this build cannot train before anything trains (run.rs `trainable_here`), two rows of one name refused (experiment.rs); no float32 row's name or artefact changed
            // 66: a row trained on a sample of its split's questions (`train_queries`) says so in its name (methods training.rs `on_a_sample`: Dense, SproutRAG), so that a learning curve's point and a trained row's all-question control are two rows; no artefact changed
            // 67: review: the trace observes `Bert::forward_from_observed` (the encoder's own loop, `forward_from_in` passes no observer: the same floats), `Precision::ensure_supported` one refusal for the trainers, `train` and `arbor trace-forward`, encoder.rs `read_config` shared with the trace; no behaviour changed
            // 68: GradCache in SproutRAG's joint step and in the dense trainer's in-document step (trainers grad_cache.rs: the step's own loss run once over `Vectors::Recording` to find and embed its inputs without a graph, then over `Vectors::Cached`; the dense corpus-wide step's cache now the same code, its gradient the same to rounding), `training.grad_cache` with any batches on arbor's own loop, a row's name says GradCache when it is set; `train` refuses a DDP row on a build without `ddp` before anything trains (run.rs `trainable_here`, trainers strategy.rs `ensure_supported`)
            // 69: review: GradCache's step takes the step encoder and the fine-tuned weights itself (the two trainers' copies of its embedding closures gone), each chunk's rows derived from the recorded rows instead of a second copy of their ids; the same floats
            // 70: the `flex` feature (burn-flex as the backend, models/src/backend.rs) and the bf16 refusal naming it; the default build's floats unchanged
            // 71: the encoder families by config.json's `model_type` (models bert/families: BERT, RoBERTa, XLM-RoBERTa, MPNet; offset positions, no token types, MPNet's relative position bias in every kernel and its gradient), the CPU kernel's attention in its own file (bert/attention.rs); a BERT encoder's floats unchanged
            // 72: a randomly initialised encoder of a family from its config.json (models bert/init.rs, `arbor init-model`) and `encoder::vocabulary_size`; no behaviour changed
            // 73: issue 86: every key names the backend (cache `versioned_under`: the flex, ndarray and CUDA builds share no artefact), the digest reads every manifest's asks and features (digest 5), `Retriever: Send + Sync` for the server's pool, the matched control keeps the row's precision, SproutRAG's document term leaves out a document holding the query's gold, models record sketches of what they trained on
            Artefact::SproutRag => 73,
            // 4: the Learner keeps the epoch validation chooses (`Fit::select`); 5: its optimizer is
            // `parallel::Grouped`; 6: `parallel::items` beside it; 7: `learner::best_epoch` on a rerun too;
            // 8: the execution strategy from `schedule.data_parallel`.
            // 10: the reranker's control became its own training's bi-encoder twin (every kind reaching the methods' registry)
            // 11: `training.min_steps`, the planner's control reading the planner's own training
            // 12: the shared objective (L_ret, the held-out reading) moved into trainers' objective.rs
            // 13: the schedule's floor of steps in one place (`Schedule::at_least`); no behaviour changed
            // 14: `training.negatives` (batches across documents, negatives mined from the training split: trainers' negatives.rs), a training query's text, unit ids read as the encoder reads them, GradCache (`training.grad_cache`), the planner's control batched across documents
            // 15: GradCache takes each side's rows in order of length (chunks pad less); no other behaviour changed
            // 16: review: mining builds no index for in-batch negatives only and computes each unit's norm once; no behaviour changed
            // 17: the skeleton's AdamW in one function (`skeleton::optimizer`, which the step benchmark reads too) and the run's set-up in `run::prepare`; no behaviour changed
            // 18: review: one dot product in the trainers (window.rs's, which mining now calls too) and one home for a window's rows (`encoder::window_rows`); no behaviour changed
            // 19: random numbers drawn on the host (arbor_models::host: initial weights, VAE noise), so a GPU build trains what the CPU build trains; a CPU build draws what it drew before
            // 20: the run loads its encoder through arbor_models::pipeline::load (a folder whose sentence-transformers pipeline is not arbor's is refused); no behaviour changed
            // 21: files split so that they import downwards (trainers dense/step.rs and sproutrag/step.rs, the reranker's training_examples.rs, utc_stamp in provenance.rs); no behaviour changed
            // 22: the query-trained trainers' start (settings checked, a training query, the seed) in one function, objective::start; no behaviour changed
            // 23: pooling and prompts as encoder settings (arbor_models::pooling): none by default, so a default encoder's vectors do not change
            // 24: the trees' shape (eval's tree_shape: depth, balance, contiguity) in the SproutRAG rows' report line; no artefact changed
            // 25: the linkage rule of SproutRAG's trees (eval's linkage: single by default, average, complete, adjacent); single linkage's trees unchanged
            // 26: the trees' shape reported through `Retriever::tree_shape` (report.json, arbor inspect); no artefact changed
            // 27: review: the trees' shape reads `Tree::depths` and `Tree::size` instead of computing them again; no behaviour changed
            // 28: the fine-tuning step's encoder by hand on the CPU (arbor_models::bert::autodiff and tape): the exact GELU derivative where Burn's differentiates the tanh approximation
            // 29: the reranker's step in the step benchmark (trainers' bench/rerank.rs, `step_flops` over any sides); no behaviour changed
            // 30: the reranker (and its control) train and score each unit's input (`units.context`'s header, then the piece); without headers nothing changes
            // 31: the hand-written step above frozen blocks copies no embedding table; no behaviour changed
            // 32: `training.negatives: Mined` (one document a step, negatives mined from the other training documents) for the dense trainer and SproutRAG's joint step; existing settings unchanged
            // 33: `training.validation: Corpus` (held-out queries read over every validation document's units); the default reading unchanged
            // 34: rows trained with `validation: Corpus` say so in their label; no artefact changed
            // 35: review: the held-out reading groups documents (one, or all) instead of flushing rows; the dense trainer's batches chosen by the setting; no behaviour changed
            // 36: `units.context`'s header is a cut sentence's lines before its first data row (datasets units.rs `table_head`: a statement's title and column row as pdftotext lays them out), not its first line, and no page number as the line before; without `context` nothing changes; the metric columns in one table (eval's scoring/columns.rs); the file helpers in their own crate (files/); SproutRAG's build in parts; every trained method takes units.context headers (the SLLM's SentenceVAE reads each unit's input; the refusal gone); the cut sentences kept (`Segmented::cut`) for `retrieval.whole_sentences`; `DocSpan::contains` and `arbor_files::hex` shared (no behaviour changed)
            // 37: eval's scoring/sentences.rs became parents.rs (`retrieval.hand_on`: whole sentences or paragraphs); `MethodSpec::serve` (`arbor query` through the methods' registry, stored.rs); no behaviour of this kind changed
            // 38: SAC fine-tuned over its document headers (`SummaryChunks((training: Some(..)))`: the dense trainer's `Needs::headers`, `tuned_unit_vectors` with headers, chunks embedded by what the encoder reads); without headers nothing changes; the reranker's examples carry an optional teacher score (serialised only when set) and its control's trainer a MarginMSE objective (`Distill`)
            // 39: `summary` on Dense and SproutRAG (every unit read after its document's summary, SAC's inputs; SproutRAG's control the dense fine-tune over the same summaries; `DocumentSummary` shared by SAC, RSE, Dense and SproutRAG); without it nothing changes; SproutRAG's joint trainer's start and optimizer groups as functions the step benchmark shares (trainers' bench/joint.rs; no behaviour changed)
            // 40: `units.context` by default (64 tokens) for the pieces of a cut *table* only (`units.context_on`: Tables, or CutSentences as before), `Segmented::tables`, `retrieval.hand_on: Tables` by default; a run of more than four digits without a separator is no data row (datasets units.rs `is_data_row`, `is_table`); where no table is cut nothing changes
            // 41: the unit cutter (experiments/src/leaves.rs) and the computing dependencies Cargo.lock pins in every kind's digest, which now keeps import aliases and cuts a test-only field, variant or arm alone (issue 61); no behaviour of this kind changed
            // 42: the document level above the trees (eval tree_retrieval.rs `DocumentLevel`, `Retriever::kept_documents`, the report's `documents_kept`, its named comparators `compare_with`; issue 62); without them nothing changes; no behaviour of this kind changed
            // 43: review: one home for a step's rows of several documents (trainers objective.rs `one_or_cat`), the report's named comparators filtered once (an untrained one meets no row twice), `parents::around` tries a line without copying what it took; eval's `runner::hand_on` (what a method hands on for one query: parents, then the budget) shared by `evaluate` and `arbor query`; no behaviour changed
            // 44: review: one reading of an index's `meta.units` (experiments stored.rs `unit_rule`), the opened index keeps no copy of its rule; no behaviour changed
            // 45: the crate's unit tests moved to its integration binary (tests/integration/unit/), what they call made public (a SAC summary's `header`, SmartChunk's `plan` module, `ById::holds`, ...); no behaviour changed
            // 46: `ARBOR_KERNELS=avx2` (models bert/avx2.rs: gemm's AVX2 + FMA microkernels on a processor with AVX-512, issue 64), gemm-common and gemm-f32 named in the manifests; by default nothing changed
            // 47: the document level above every tree method (eval retrievers/document_level.rs `Scoped`, `DocumentVector::Summary`; RAPTOR's and the heading hierarchy's `documents`; issue 62): SproutRAG's level moved out of tree_retrieval.rs, its rankings unchanged; without a level nothing changes
            // 48: `evaluate` without --from refuses a trained row before loading anything (`Trains::needs_model`, `Training::never_trained`); reproduce's corpus-scope section; no behaviour of this kind changed
            // 49: review: one rule for a header's document name (document_summary `header_name`) and one form of a headed input (chunks `headed`), shared with indexes; the distilled student serves an index; no behaviour of this kind changed
            // 50: the encoder's element-wise passes of the hand-written backward pass at the processor's width and an AVX-512 version of each beside the AVX2 one (models bert/cpu.rs `multiversion!`, following ARBOR_KERNELS; the softmax's loop inside its target features), models/build.rs records the crate's opt-level for the encoder benchmark, the step benchmark over several documents (trainers bench/joint.rs `FixedJointStep`; issues 62 and 64): the same floats, no behaviour changed
            // 51: one refusal of a build slower than users run for the encoder and scale benchmarks (models processor.rs `ensure_release_build`); no behaviour changed
            // 52: the method's serving over a stored index takes the opened index with its encoder and the run's row (methods `Serving`; issue 63: trained SproutRAG rows and rerankers serve `arbor index --from`, sproutrag serve.rs `RowTrees` one home for a row's trees over new documents), SproutRAG's finished model read on any backend (trainers sproutrag `finished`), the reranker's loading in one function (`finished_scorer`); no behaviour changed
            // 53: the host's generator held while a seed draws and the target loads (models host.rs `holding`: two trainings or tests drawing at once each get their own seed's numbers; a test's draws had fallen between another's seeding and drawing); no behaviour changed in one training
            // 54: review: SproutRAG's served trees reuse `rows`, the index's record of a trained row made in one piece (library trained.rs `Servable`); no behaviour changed
            // 55: the methods' serving over a stored index may go through the approximate index it keeps (methods `Serving.neighbours`, Flat's serve; issue 63: `arbor index --approximate`, store approximate.rs); no behaviour changed
            // 56: training.precision (issue 65: bf16 autocast in Burn's BERT forward, models bert precision.rs; the step encoder's precision, trainers encoder.rs `StepEncoder::of`), the CPU build's pass without a graph (GradCache's first) through the inference kernel, the dense trainer's corpus-wide task for the large-batch benchmark (`corpus_task`, bench pairs.rs); float32 steps unchanged, GradCache's first pass on the CPU to float rounding
            // 57: review of the change before: the bf16 tests on burn-flex left out of a build with Burn's collectives (models and trainers `ddp`), the step's bf16 test moved beside the step (trainers dense step.rs); no behaviour changed
            // 58: the bf16 tests marked `#[cfg(test)]` (a test module is no part of a digest), no behaviour changed
            // 59: attention spread over the thread pool by head for long sequences (the same floats), the CPU optimizer fused (trainers' adamw.rs: Burn's AdamW and clipping element by element, the same weights to the clipping norm's rounding)
            // 60: review: FusedAdamW's clip always set, the parallel trainer's AdamW from adamw::config, the skeleton's step_gradients (a step's loss and gradients, cached or plain) shared with the large-batch bench (no behaviour changed)
            // 61: the bench profile's opt-level overrides, which never reached `cargo test --release`, removed from Cargo.toml and the doc comments that named them corrected (models processor.rs); no behaviour changed
            // 62: arbor-ablations compiled at opt-level 0 (the workspace manifest's release profile: its sweeps, tables and verdicts run no model); no behaviour changed
            // 63: `BertLayer::forward_observed` (a block's forward shows each step to an observer; `forward_in` passes none: the same floats) and the forward trace (models bert/trace.rs, `arbor trace-forward`: issue 65's numerics); no behaviour changed
            // 64: a row's name says `bf16 autocast` when it trains so (methods training.rs `in_bf16`), `train` refuses a row this build cannot train before anything trains (run.rs `trainable_here`), two rows of one name refused (experiment.rs); no float32 row's name or artefact changed
            // 65: a row trained on a sample of its split's questions (`train_queries`) says so in its name (methods training.rs `on_a_sample`: Dense, SproutRAG), so that a learning curve's point and a trained row's all-question control are two rows; no artefact changed
            // 66: review: the trace observes `Bert::forward_from_observed` (the encoder's own loop, `forward_from_in` passes no observer: the same floats), `Precision::ensure_supported` one refusal for the trainers, `train` and `arbor trace-forward`, encoder.rs `read_config` shared with the trace; no behaviour changed
            // 67: GradCache in SproutRAG's joint step and in the dense trainer's in-document step (trainers grad_cache.rs: the step's own loss run once over `Vectors::Recording` to find and embed its inputs without a graph, then over `Vectors::Cached`; the dense corpus-wide step's cache now the same code, its gradient the same to rounding), `training.grad_cache` with any batches on arbor's own loop, a row's name says GradCache when it is set; `train` refuses a DDP row on a build without `ddp` before anything trains (run.rs `trainable_here`, trainers strategy.rs `ensure_supported`)
            // 68: review: GradCache's step takes the step encoder and the fine-tuned weights itself (the two trainers' copies of its embedding closures gone), each chunk's rows derived from the recorded rows instead of a second copy of their ids; the same floats
            // 69: the `flex` feature (burn-flex as the backend, models/src/backend.rs) and the bf16 refusal naming it; the default build's floats unchanged
            // 70: the encoder families by config.json's `model_type` (models bert/families: BERT, RoBERTa, XLM-RoBERTa, MPNet; offset positions, no token types, MPNet's relative position bias in every kernel and its gradient), the CPU kernel's attention in its own file (bert/attention.rs); a BERT encoder's floats unchanged
            // 71: a randomly initialised encoder of a family from its config.json (models bert/init.rs, `arbor init-model`) and `encoder::vocabulary_size`; no behaviour changed
            // 72: issue 86: every key names the backend (cache `versioned_under`: the flex, ndarray and CUDA builds share no artefact), the digest reads every manifest's asks and features (digest 5), `Retriever: Send + Sync` for the server's pool, the matched control keeps the row's precision, SproutRAG's document term leaves out a document holding the query's gold, models record sketches of what they trained on
            Artefact::Compressor => 72,
            // 4: the sampled step's code listed; `schedule.devices` fine-tunes the encoder on the Learner;
            // 5: the Learner's optimizer is `parallel::Grouped`; 6: the adapter on the Learner too, one
            // `plain_loss` for both loops; 7: `learner::best_epoch` on a rerun too; 8: the execution
            // strategy from `schedule.data_parallel`; 9: `training::sample`, shared with the reranker.
            // 11: the reranker's control became its own training's bi-encoder twin (every kind reaching the methods' registry)
            // 12: `training.min_steps`, the planner's control reading the planner's own training
            // 13: the shared objective (L_ret, the held-out reading) moved into trainers' objective.rs
            // 14: the schedule's floor of steps in one place (`Schedule::at_least`); no behaviour changed
            // 15: `training.negatives` (batches across documents, negatives mined from the training split: trainers' negatives.rs), a training query's text, unit ids read as the encoder reads them, GradCache (`training.grad_cache`), the planner's control batched across documents
            // 16: GradCache takes each side's rows in order of length (chunks pad less); no other behaviour changed
            // 17: review: mining builds no index for in-batch negatives only and computes each unit's norm once; no behaviour changed
            // 18: the skeleton's AdamW in one function (`skeleton::optimizer`, which the step benchmark reads too) and the run's set-up in `run::prepare`; no behaviour changed
            // 19: review: one dot product in the trainers (window.rs's, which mining now calls too) and one home for a window's rows (`encoder::window_rows`); no behaviour changed
            // 20: random numbers drawn on the host (arbor_models::host: initial weights, VAE noise), so a GPU build trains what the CPU build trains; a CPU build draws what it drew before
            // 21: the run loads its encoder through arbor_models::pipeline::load (a folder whose sentence-transformers pipeline is not arbor's is refused); no behaviour changed
            // 22: files split so that they import downwards (trainers dense/step.rs and sproutrag/step.rs, the reranker's training_examples.rs, utc_stamp in provenance.rs); no behaviour changed
            // 23: the query-trained trainers' start (settings checked, a training query, the seed) in one function, objective::start; no behaviour changed
            // 24: pooling and prompts as encoder settings (arbor_models::pooling): none by default, so a default encoder's vectors do not change
            // 25: the trees' shape (eval's tree_shape: depth, balance, contiguity) in the SproutRAG rows' report line; no artefact changed
            // 26: the linkage rule of SproutRAG's trees (eval's linkage: single by default, average, complete, adjacent); single linkage's trees unchanged
            // 27: the trees' shape reported through `Retriever::tree_shape` (report.json, arbor inspect); no artefact changed
            // 28: review: the trees' shape reads `Tree::depths` and `Tree::size` instead of computing them again; no behaviour changed
            // 29: the fine-tuning step's encoder by hand on the CPU (arbor_models::bert::autodiff and tape): the exact GELU derivative where Burn's differentiates the tanh approximation
            // 30: the reranker's step in the step benchmark (trainers' bench/rerank.rs, `step_flops` over any sides); no behaviour changed
            // 31: the reranker (and its control) train and score each unit's input (`units.context`'s header, then the piece); without headers nothing changes
            // 32: the hand-written step above frozen blocks copies no embedding table; no behaviour changed
            // 33: `training.negatives: Mined` (one document a step, negatives mined from the other training documents) for the dense trainer and SproutRAG's joint step; existing settings unchanged
            // 34: `training.validation: Corpus` (held-out queries read over every validation document's units); the default reading unchanged
            // 35: rows trained with `validation: Corpus` say so in their label; no artefact changed
            // 36: review: the held-out reading groups documents (one, or all) instead of flushing rows; the dense trainer's batches chosen by the setting; no behaviour changed
            // 37: `units.context`'s header is a cut sentence's lines before its first data row (datasets units.rs `table_head`: a statement's title and column row as pdftotext lays them out), not its first line, and no page number as the line before; without `context` nothing changes; the metric columns in one table (eval's scoring/columns.rs); the file helpers in their own crate (files/); SproutRAG's build in parts; every trained method takes units.context headers (the SLLM's SentenceVAE reads each unit's input; the refusal gone); the cut sentences kept (`Segmented::cut`) for `retrieval.whole_sentences`; `DocSpan::contains` and `arbor_files::hex` shared (no behaviour changed)
            // 38: eval's scoring/sentences.rs became parents.rs (`retrieval.hand_on`: whole sentences or paragraphs); `MethodSpec::serve` (`arbor query` through the methods' registry, stored.rs); no behaviour of this kind changed
            // 39: SAC fine-tuned over its document headers (`SummaryChunks((training: Some(..)))`: the dense trainer's `Needs::headers`, `tuned_unit_vectors` with headers, chunks embedded by what the encoder reads); without headers nothing changes; the reranker's examples carry an optional teacher score (serialised only when set) and its control's trainer a MarginMSE objective (`Distill`)
            // 40: `summary` on Dense and SproutRAG (every unit read after its document's summary, SAC's inputs; SproutRAG's control the dense fine-tune over the same summaries; `DocumentSummary` shared by SAC, RSE, Dense and SproutRAG); without it nothing changes; SproutRAG's joint trainer's start and optimizer groups as functions the step benchmark shares (trainers' bench/joint.rs; no behaviour changed)
            // 41: `units.context` by default (64 tokens) for the pieces of a cut *table* only (`units.context_on`: Tables, or CutSentences as before), `Segmented::tables`, `retrieval.hand_on: Tables` by default; a run of more than four digits without a separator is no data row (datasets units.rs `is_data_row`, `is_table`); where no table is cut nothing changes
            // 42: the unit cutter (experiments/src/leaves.rs) and the computing dependencies Cargo.lock pins in every kind's digest, which now keeps import aliases and cuts a test-only field, variant or arm alone (issue 61); an in-document step's false negatives left out of its denominator, as SproutRAG's
            // 43: the dense control's step over `docs_per_step` documents, as SproutRAG's (issue 62); with one nothing changes
            // 44: review: one home for a step's rows of several documents (trainers objective.rs `one_or_cat`), the report's named comparators filtered once (an untrained one meets no row twice), `parents::around` tries a line without copying what it took; eval's `runner::hand_on` (what a method hands on for one query: parents, then the budget) shared by `evaluate` and `arbor query`; no behaviour changed
            // 45: review: one reading of an index's `meta.units` (experiments stored.rs `unit_rule`), the opened index keeps no copy of its rule; no behaviour changed
            // 46: the crate's unit tests moved to its integration binary (tests/integration/unit/), what they call made public (a SAC summary's `header`, SmartChunk's `plan` module, `ById::holds`, ...); no behaviour changed
            // 47: `ARBOR_KERNELS=avx2` (models bert/avx2.rs: gemm's AVX2 + FMA microkernels on a processor with AVX-512, issue 64), gemm-common and gemm-f32 named in the manifests; by default nothing changed
            // 48: the document level above every tree method (eval retrievers/document_level.rs `Scoped`, `DocumentVector::Summary`; RAPTOR's and the heading hierarchy's `documents`; issue 62): SproutRAG's level moved out of tree_retrieval.rs, its rankings unchanged; without a level nothing changes
            // 49: `evaluate` without --from refuses a trained row before loading anything (`Trains::needs_model`, `Training::never_trained`); reproduce's corpus-scope section; no behaviour of this kind changed
            // 50: review: one rule for a header's document name (document_summary `header_name`) and one form of a headed input (chunks `headed`), shared with indexes; the distilled student serves an index; no behaviour of this kind changed
            // 51: the encoder's element-wise passes of the hand-written backward pass at the processor's width and an AVX-512 version of each beside the AVX2 one (models bert/cpu.rs `multiversion!`, following ARBOR_KERNELS; the softmax's loop inside its target features), models/build.rs records the crate's opt-level for the encoder benchmark, the step benchmark over several documents (trainers bench/joint.rs `FixedJointStep`; issues 62 and 64): the same floats, no behaviour changed
            // 52: one refusal of a build slower than users run for the encoder and scale benchmarks (models processor.rs `ensure_release_build`); no behaviour changed
            // 53: the method's serving over a stored index takes the opened index with its encoder and the run's row (methods `Serving`; issue 63: trained SproutRAG rows and rerankers serve `arbor index --from`, sproutrag serve.rs `RowTrees` one home for a row's trees over new documents), SproutRAG's finished model read on any backend (trainers sproutrag `finished`), the reranker's loading in one function (`finished_scorer`); no behaviour changed
            // 54: the host's generator held while a seed draws and the target loads (models host.rs `holding`: two trainings or tests drawing at once each get their own seed's numbers; a test's draws had fallen between another's seeding and drawing); no behaviour changed in one training
            // 55: review: SproutRAG's served trees reuse `rows`, the index's record of a trained row made in one piece (library trained.rs `Servable`); no behaviour changed
            // 56: the methods' serving over a stored index may go through the approximate index it keeps (methods `Serving.neighbours`, Flat's serve; issue 63: `arbor index --approximate`, store approximate.rs); no behaviour changed
            // 57: training.precision (issue 65: bf16 autocast in Burn's BERT forward, models bert precision.rs; the step encoder's precision, trainers encoder.rs `StepEncoder::of`), the CPU build's pass without a graph (GradCache's first) through the inference kernel, the dense trainer's corpus-wide task for the large-batch benchmark (`corpus_task`, bench pairs.rs); float32 steps unchanged, GradCache's first pass on the CPU to float rounding
            // 58: review of the change before: the bf16 tests on burn-flex left out of a build with Burn's collectives (models and trainers `ddp`), the step's bf16 test moved beside the step (trainers dense step.rs); no behaviour changed
            // 59: the bf16 tests marked `#[cfg(test)]` (a test module is no part of a digest), no behaviour changed
            // 60: attention spread over the thread pool by head for long sequences (the same floats), the CPU optimizer fused (trainers' adamw.rs: Burn's AdamW and clipping element by element, the same weights to the clipping norm's rounding)
            // 61: review: FusedAdamW's clip always set, the parallel trainer's AdamW from adamw::config, the skeleton's step_gradients (a step's loss and gradients, cached or plain) shared with the large-batch bench (no behaviour changed)
            // 62: the bench profile's opt-level overrides, which never reached `cargo test --release`, removed from Cargo.toml and the doc comments that named them corrected (models processor.rs); no behaviour changed
            // 63: arbor-ablations compiled at opt-level 0 (the workspace manifest's release profile: its sweeps, tables and verdicts run no model); no behaviour changed
            // 64: `BertLayer::forward_observed` (a block's forward shows each step to an observer; `forward_in` passes none: the same floats) and the forward trace (models bert/trace.rs, `arbor trace-forward`: issue 65's numerics); no behaviour changed
            // 65: a row's name says `bf16 autocast` when it trains so (methods training.rs `in_bf16`), `train` refuses a row this build cannot train before anything trains (run.rs `trainable_here`), two rows of one name refused (experiment.rs); no float32 row's name or artefact changed
            // 66: a row trained on a sample of its split's questions (`train_queries`) says so in its name (methods training.rs `on_a_sample`: Dense, SproutRAG), so that a learning curve's point and a trained row's all-question control are two rows; no artefact changed
            // 67: review: the trace observes `Bert::forward_from_observed` (the encoder's own loop, `forward_from_in` passes no observer: the same floats), `Precision::ensure_supported` one refusal for the trainers, `train` and `arbor trace-forward`, encoder.rs `read_config` shared with the trace; no behaviour changed
            // 68: GradCache in SproutRAG's joint step and in the dense trainer's in-document step (trainers grad_cache.rs: the step's own loss run once over `Vectors::Recording` to find and embed its inputs without a graph, then over `Vectors::Cached`; the dense corpus-wide step's cache now the same code, its gradient the same to rounding), `training.grad_cache` with any batches on arbor's own loop, a row's name says GradCache when it is set; `train` refuses a DDP row on a build without `ddp` before anything trains (run.rs `trainable_here`, trainers strategy.rs `ensure_supported`)
            // 69: review: GradCache's step takes the step encoder and the fine-tuned weights itself (the two trainers' copies of its embedding closures gone), each chunk's rows derived from the recorded rows instead of a second copy of their ids; the same floats
            // 70: the `flex` feature (burn-flex as the backend, models/src/backend.rs) and the bf16 refusal naming it; the default build's floats unchanged
            // 71: the encoder families by config.json's `model_type` (models bert/families: BERT, RoBERTa, XLM-RoBERTa, MPNet; offset positions, no token types, MPNet's relative position bias in every kernel and its gradient), the CPU kernel's attention in its own file (bert/attention.rs); a BERT encoder's floats unchanged
            // 72: a randomly initialised encoder of a family from its config.json (models bert/init.rs, `arbor init-model`) and `encoder::vocabulary_size`; no behaviour changed
            // 73: issue 86: every key names the backend (cache `versioned_under`: the flex, ndarray and CUDA builds share no artefact), the digest reads every manifest's asks and features (digest 5), `Retriever: Send + Sync` for the server's pool, the matched control keeps the row's precision, SproutRAG's document term leaves out a document holding the query's gold, models record sketches of what they trained on
            Artefact::Dense => 73,
            // 4: the report names every plan the planner made (its distribution over the evaluated queries);
            // 5: `Fit::select`, and trainers' encoder.rs listed among the sources; 6: `parallel::Grouped`;
            // 7: `parallel::items` beside it; 8: `learner::best_epoch` on a rerun too; 9: the execution
            // strategy from `schedule.data_parallel`.
            // 11: the reranker's control became its own training's bi-encoder twin (every kind reaching the methods' registry)
            // 12: `training.min_steps`, the planner's control reading the planner's own training
            // 13: the shared objective (L_ret, the held-out reading) moved into trainers' objective.rs
            // 14: the schedule's floor of steps in one place (`Schedule::at_least`); no behaviour changed
            // 15: `training.negatives` (batches across documents, negatives mined from the training split: trainers' negatives.rs), a training query's text, unit ids read as the encoder reads them, GradCache (`training.grad_cache`), the planner's control batched across documents
            // 16: GradCache takes each side's rows in order of length (chunks pad less); no other behaviour changed
            // 17: review: mining builds no index for in-batch negatives only and computes each unit's norm once; no behaviour changed
            // 18: the skeleton's AdamW in one function (`skeleton::optimizer`, which the step benchmark reads too) and the run's set-up in `run::prepare`; no behaviour changed
            // 19: review: one dot product in the trainers (window.rs's, which mining now calls too) and one home for a window's rows (`encoder::window_rows`); no behaviour changed
            // 20: random numbers drawn on the host (arbor_models::host: initial weights, VAE noise), so a GPU build trains what the CPU build trains; a CPU build draws what it drew before
            // 21: the run loads its encoder through arbor_models::pipeline::load (a folder whose sentence-transformers pipeline is not arbor's is refused); no behaviour changed
            // 22: files split so that they import downwards (trainers dense/step.rs and sproutrag/step.rs, the reranker's training_examples.rs, utc_stamp in provenance.rs); no behaviour changed
            // 23: the query-trained trainers' start (settings checked, a training query, the seed) in one function, objective::start; no behaviour changed
            // 24: pooling and prompts as encoder settings (arbor_models::pooling): none by default, so a default encoder's vectors do not change
            // 25: the trees' shape (eval's tree_shape: depth, balance, contiguity) in the SproutRAG rows' report line; no artefact changed
            // 26: the linkage rule of SproutRAG's trees (eval's linkage: single by default, average, complete, adjacent); single linkage's trees unchanged
            // 27: the trees' shape reported through `Retriever::tree_shape` (report.json, arbor inspect); no artefact changed
            // 28: review: the trees' shape reads `Tree::depths` and `Tree::size` instead of computing them again; no behaviour changed
            // 29: the fine-tuning step's encoder by hand on the CPU (arbor_models::bert::autodiff and tape): the exact GELU derivative where Burn's differentiates the tanh approximation
            // 30: the reranker's step in the step benchmark (trainers' bench/rerank.rs, `step_flops` over any sides); no behaviour changed
            // 31: the reranker (and its control) train and score each unit's input (`units.context`'s header, then the piece); without headers nothing changes
            // 32: the hand-written step above frozen blocks copies no embedding table; no behaviour changed
            // 33: `training.negatives: Mined` (one document a step, negatives mined from the other training documents) for the dense trainer and SproutRAG's joint step; existing settings unchanged
            // 34: `training.validation: Corpus` (held-out queries read over every validation document's units); the default reading unchanged
            // 35: rows trained with `validation: Corpus` say so in their label; no artefact changed
            // 36: review: the held-out reading groups documents (one, or all) instead of flushing rows; the dense trainer's batches chosen by the setting; no behaviour changed
            // 37: `units.context`'s header is a cut sentence's lines before its first data row (datasets units.rs `table_head`: a statement's title and column row as pdftotext lays them out), not its first line, and no page number as the line before; without `context` nothing changes; the metric columns in one table (eval's scoring/columns.rs); the file helpers in their own crate (files/); SproutRAG's build in parts; every trained method takes units.context headers (the SLLM's SentenceVAE reads each unit's input; the refusal gone); the cut sentences kept (`Segmented::cut`) for `retrieval.whole_sentences`; `DocSpan::contains` and `arbor_files::hex` shared (no behaviour changed)
            // 38: eval's scoring/sentences.rs became parents.rs (`retrieval.hand_on`: whole sentences or paragraphs); `MethodSpec::serve` (`arbor query` through the methods' registry, stored.rs); no behaviour of this kind changed
            // 39: SAC fine-tuned over its document headers (`SummaryChunks((training: Some(..)))`: the dense trainer's `Needs::headers`, `tuned_unit_vectors` with headers, chunks embedded by what the encoder reads); without headers nothing changes; the reranker's examples carry an optional teacher score (serialised only when set) and its control's trainer a MarginMSE objective (`Distill`)
            // 40: `summary` on Dense and SproutRAG (every unit read after its document's summary, SAC's inputs; SproutRAG's control the dense fine-tune over the same summaries; `DocumentSummary` shared by SAC, RSE, Dense and SproutRAG); without it nothing changes; SproutRAG's joint trainer's start and optimizer groups as functions the step benchmark shares (trainers' bench/joint.rs; no behaviour changed)
            // 41: `units.context` by default (64 tokens) for the pieces of a cut *table* only (`units.context_on`: Tables, or CutSentences as before), `Segmented::tables`, `retrieval.hand_on: Tables` by default; a run of more than four digits without a separator is no data row (datasets units.rs `is_data_row`, `is_table`); where no table is cut nothing changes
            // 42: the unit cutter (experiments/src/leaves.rs) and the computing dependencies Cargo.lock pins in every kind's digest, which now keeps import aliases and cuts a test-only field, variant or arm alone (issue 61); no behaviour of this kind changed
            // 43: the document level above the trees (eval tree_retrieval.rs `DocumentLevel`, `Retriever::kept_documents`, the report's `documents_kept`, its named comparators `compare_with`; issue 62); without them nothing changes; no behaviour of this kind changed
            // 44: review: one home for a step's rows of several documents (trainers objective.rs `one_or_cat`), the report's named comparators filtered once (an untrained one meets no row twice), `parents::around` tries a line without copying what it took; eval's `runner::hand_on` (what a method hands on for one query: parents, then the budget) shared by `evaluate` and `arbor query`; no behaviour changed
            // 45: review: one reading of an index's `meta.units` (experiments stored.rs `unit_rule`), the opened index keeps no copy of its rule; no behaviour changed
            // 46: the crate's unit tests moved to its integration binary (tests/integration/unit/), what they call made public (a SAC summary's `header`, SmartChunk's `plan` module, `ById::holds`, ...); no behaviour changed
            // 47: `ARBOR_KERNELS=avx2` (models bert/avx2.rs: gemm's AVX2 + FMA microkernels on a processor with AVX-512, issue 64), gemm-common and gemm-f32 named in the manifests; by default nothing changed
            // 48: the document level above every tree method (eval retrievers/document_level.rs `Scoped`, `DocumentVector::Summary`; RAPTOR's and the heading hierarchy's `documents`; issue 62): SproutRAG's level moved out of tree_retrieval.rs, its rankings unchanged; without a level nothing changes
            // 49: `evaluate` without --from refuses a trained row before loading anything (`Trains::needs_model`, `Training::never_trained`); reproduce's corpus-scope section; no behaviour of this kind changed
            // 50: review: one rule for a header's document name (document_summary `header_name`) and one form of a headed input (chunks `headed`), shared with indexes; the distilled student serves an index; no behaviour of this kind changed
            // 51: the encoder's element-wise passes of the hand-written backward pass at the processor's width and an AVX-512 version of each beside the AVX2 one (models bert/cpu.rs `multiversion!`, following ARBOR_KERNELS; the softmax's loop inside its target features), models/build.rs records the crate's opt-level for the encoder benchmark, the step benchmark over several documents (trainers bench/joint.rs `FixedJointStep`; issues 62 and 64): the same floats, no behaviour changed
            // 52: one refusal of a build slower than users run for the encoder and scale benchmarks (models processor.rs `ensure_release_build`); no behaviour changed
            // 53: the method's serving over a stored index takes the opened index with its encoder and the run's row (methods `Serving`; issue 63: trained SproutRAG rows and rerankers serve `arbor index --from`, sproutrag serve.rs `RowTrees` one home for a row's trees over new documents), SproutRAG's finished model read on any backend (trainers sproutrag `finished`), the reranker's loading in one function (`finished_scorer`); no behaviour changed
            // 54: the host's generator held while a seed draws and the target loads (models host.rs `holding`: two trainings or tests drawing at once each get their own seed's numbers; a test's draws had fallen between another's seeding and drawing); no behaviour changed in one training
            // 55: review: SproutRAG's served trees reuse `rows`, the index's record of a trained row made in one piece (library trained.rs `Servable`); no behaviour changed
            // 56: the methods' serving over a stored index may go through the approximate index it keeps (methods `Serving.neighbours`, Flat's serve; issue 63: `arbor index --approximate`, store approximate.rs); no behaviour changed
            // 57: training.precision (issue 65: bf16 autocast in Burn's BERT forward, models bert precision.rs; the step encoder's precision, trainers encoder.rs `StepEncoder::of`), the CPU build's pass without a graph (GradCache's first) through the inference kernel, the dense trainer's corpus-wide task for the large-batch benchmark (`corpus_task`, bench pairs.rs); float32 steps unchanged, GradCache's first pass on the CPU to float rounding
            // 58: review of the change before: the bf16 tests on burn-flex left out of a build with Burn's collectives (models and trainers `ddp`), the step's bf16 test moved beside the step (trainers dense step.rs); no behaviour changed
            // 59: the bf16 tests marked `#[cfg(test)]` (a test module is no part of a digest), no behaviour changed
            // 60: attention spread over the thread pool by head for long sequences (the same floats), the CPU optimizer fused (trainers' adamw.rs: Burn's AdamW and clipping element by element, the same weights to the clipping norm's rounding)
            // 61: review: FusedAdamW's clip always set, the parallel trainer's AdamW from adamw::config, the skeleton's step_gradients (a step's loss and gradients, cached or plain) shared with the large-batch bench (no behaviour changed)
            // 62: the bench profile's opt-level overrides, which never reached `cargo test --release`, removed from Cargo.toml and the doc comments that named them corrected (models processor.rs); no behaviour changed
            // 63: arbor-ablations compiled at opt-level 0 (the workspace manifest's release profile: its sweeps, tables and verdicts run no model); no behaviour changed
            // 64: `BertLayer::forward_observed` (a block's forward shows each step to an observer; `forward_in` passes none: the same floats) and the forward trace (models bert/trace.rs, `arbor trace-forward`: issue 65's numerics); no behaviour changed
            // 65: a row's name says `bf16 autocast` when it trains so (methods training.rs `in_bf16`), `train` refuses a row this build cannot train before anything trains (run.rs `trainable_here`), two rows of one name refused (experiment.rs); no float32 row's name or artefact changed
            // 66: a row trained on a sample of its split's questions (`train_queries`) says so in its name (methods training.rs `on_a_sample`: Dense, SproutRAG), so that a learning curve's point and a trained row's all-question control are two rows; no artefact changed
            // 67: review: the trace observes `Bert::forward_from_observed` (the encoder's own loop, `forward_from_in` passes no observer: the same floats), `Precision::ensure_supported` one refusal for the trainers, `train` and `arbor trace-forward`, encoder.rs `read_config` shared with the trace; no behaviour changed
            // 68: GradCache in SproutRAG's joint step and in the dense trainer's in-document step (trainers grad_cache.rs: the step's own loss run once over `Vectors::Recording` to find and embed its inputs without a graph, then over `Vectors::Cached`; the dense corpus-wide step's cache now the same code, its gradient the same to rounding), `training.grad_cache` with any batches on arbor's own loop, a row's name says GradCache when it is set; `train` refuses a DDP row on a build without `ddp` before anything trains (run.rs `trainable_here`, trainers strategy.rs `ensure_supported`)
            // 69: review: GradCache's step takes the step encoder and the fine-tuned weights itself (the two trainers' copies of its embedding closures gone), each chunk's rows derived from the recorded rows instead of a second copy of their ids; the same floats
            // 70: the `flex` feature (burn-flex as the backend, models/src/backend.rs) and the bf16 refusal naming it; the default build's floats unchanged
            // 71: the encoder families by config.json's `model_type` (models bert/families: BERT, RoBERTa, XLM-RoBERTa, MPNet; offset positions, no token types, MPNet's relative position bias in every kernel and its gradient), the CPU kernel's attention in its own file (bert/attention.rs); a BERT encoder's floats unchanged
            // 72: a randomly initialised encoder of a family from its config.json (models bert/init.rs, `arbor init-model`) and `encoder::vocabulary_size`; no behaviour changed
            // 73: issue 86: every key names the backend (cache `versioned_under`: the flex, ndarray and CUDA builds share no artefact), the digest reads every manifest's asks and features (digest 5), `Retriever: Send + Sync` for the server's pool, the matched control keeps the row's precision, SproutRAG's document term leaves out a document holding the query's gold, models record sketches of what they trained on
            Artefact::Planner => 73,
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
