//! The papers' own tables and figures, quoted as data with the table and dataset they come from: what
//! `reproduce` sets beside ours.

use super::PaperTable;

pub(super) const SPROUT_TABLE1: PaperTable = PaperTable {
    source: "SproutRAG, Table 1: IE = Recall x Precision, mean of @1, @3, @5 (SCI-DOCS, LegalBench-RAG, Dragonball, MS MARCO)",
    columns: &["Dataset", "Dense X", "Meta-Chunk", "RAPTOR", "LightRAG", "GraphRAG", "PropRAG", "SproutRAG"],
    rows: &[
        &["SCI-DOCS", "31.2", "32.8", "34.0", "32.5", "30.8", "33.6", "38.7"],
        &["LegalBench-RAG", "33.5", "35.2", "35.8", "34.0", "32.5", "36.0", "40.9"],
        &["Dragonball", "37.5", "38.2", "40.0", "36.8", "35.0", "39.5", "48.1"],
        &["MS MARCO", "29.0", "28.5", "27.2", "26.8", "25.0", "27.5", "35.8"],
    ],
};

pub(super) const SPROUT_BEAM: PaperTable = PaperTable {
    source: "SproutRAG, Section 3: \"Beam width b=5 is optimal from ablation studies\" (the paper prints no per-b numbers)",
    columns: &["beam width", "IE"],
    rows: &[&["5", "best (no figure given)"]],
};

pub(super) const RAPTOR_TABLE8: PaperTable = PaperTable {
    source: "RAPTOR, Table 8: QA accuracy on one QuALITY story, retrieving from subsets of the tree's layers",
    columns: &["Layers queried / start layer", "Layer 0 (leaf nodes)", "Layer 1", "Layer 2"],
    rows: &[&["1 layer", "57.9", "57.8", "57.9"], &["2 layers", "-", "52.6", "63.15"], &["3 layers", "-", "-", "73.68"]],
};

pub(super) const SPROUT_AGGREGATION: PaperTable = PaperTable {
    source: "SproutRAG, Section 2.2: uniform averaging over (layer, head) \"introduces proximity bias\"; learned weights remove it (no ablation figures given)",
    columns: &["aggregation", "IE"],
    rows: &[&["uniform", "worse (no figure given)"], &["learned softmax(alpha)", "better (no figure given)"]],
};

pub(super) const SMARTCHUNK_TABLE2: PaperTable = PaperTable {
    source: "SmartChunk, Table 2: QA accuracy, retrieval Recall@5 (gold answer span in the top 5 chunks), cost, latency; mean over its datasets (QASPER, QuALITY, Natural Questions, ...)",
    columns: &["Type", "Method", "QA Acc", "Retrieval recall", "Monetary cost ($)", "Latency (s)"],
    rows: &[
        &["Single", "Fixed-size chunking (sentence)", "0.251", "0.517", "0.007", "1.16"],
        &["Single", "Fixed-size chunking (512)", "0.285", "0.648", "0.006", "1.09"],
        &["Single", "Late chunking", "0.363", "0.661", "0.007", "1.26"],
        &["Multi", "RAPTOR", "0.526", "0.714", "0.398", "3.21"],
        &["Multi", "MAL RAG", "0.561", "0.842", "0.301", "4.14"],
        &["Multi", "GRAG", "0.547", "0.806", "0.269", "4.20"],
        &["Ours", "w/o P", "0.539", "0.773", "0.096", "1.94"],
        &["Ours", "w/o E (directly encode)", "0.427", "0.723", "0.079", "2.00"],
        &["Ours", "w/o E (summarize)", "0.582", "0.861", "0.204", "3.85"],
        &["Ours", "SMARTCHUNK", "0.564", "0.829", "0.078", "3.62"],
    ],
};

pub(super) const SMARTCHUNK_TABLE5: PaperTable = PaperTable {
    source: "SmartChunk, Table 5: planner training strategies (their datasets)",
    columns: &["Method", "# Training Tokens", "Planning Acc", "Planning Latency", "QA Acc", "Monetary cost ($)"],
    rows: &[
        &["SFT", "795k", "0.740", "1.162", "0.491", "0.085"],
        &["RL", "/", "0.356", "0.365", "0.427", "0.066"],
        &["SFT+RL", "795k", "0.763", "0.831", "0.538", "0.073"],
        &["SFT+RL", "418k", "0.544", "0.693", "0.467", "0.081"],
        &["STITCH", "418k", "0.820", "0.848", "0.564", "0.078"],
    ],
};

/// SproutRAG over RAPTOR on LegalBench-RAG in the paper: 40.9 / 35.8.
pub(super) const LEGALBENCH_RATIO: f64 = 40.9 / 35.8;

pub(super) const SPROUT_LINKAGE: PaperTable = PaperTable {
    source: "SproutRAG, Section 2.3 (the tree: greedy merges of the most similar pair, i.e. single linkage) and Section 3 (beam search \
             hands on nodes); the paper has no linkage ablation and prints no figure for it",
    columns: &["linkage", "search", "IE"],
    rows: &[&["single (most similar pair)", "beam search, nodes handed on", "(no figure given)"]],
};
