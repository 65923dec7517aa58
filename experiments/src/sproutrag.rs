//! Indexing documents into SproutRAG trees: unit attention -> HeadAggregator -> M -> greedy tree with
//! progressive embeddings (SproutRAG, Sections 2.1-2.3). The trees are saved into the run folder.

use std::path::Path;

use arbor_datasets::Corpus;
use arbor_eval::tree::{Similarity, Tree};
use arbor_eval::LeafIndex;
use arbor_models::aggregator::HeadAggregator;
use arbor_models::{DefaultBackend, SentenceEncoder};
use burn::tensor::{Tensor, TensorData};

use crate::experiment::{AttentionSource, SproutRagConfig};
use crate::progress::bar;

/// One tree per document in `docs` (others `None`), built from the unit embeddings and saved as
/// `trees_dir/<document index>.tree`.
pub fn build_trees(
    encoder: &SentenceEncoder<DefaultBackend>,
    config: &SproutRagConfig,
    corpus: &Corpus,
    index: &LeafIndex,
    docs: &[usize],
    unit_embeddings: &[Vec<f32>],
    batch_size: usize,
    trees_dir: &Path,
) -> anyhow::Result<Vec<Option<Tree>>> {
    std::fs::create_dir_all(trees_dir)?;
    let device = encoder.device();
    let aggregator = HeadAggregator::<DefaultBackend>::new(
        encoder.config.num_hidden_layers,
        encoder.config.num_attention_heads,
        config.aggregation,
        device,
    );
    let mut trees = vec![None; corpus.documents.len()];
    let pb = bar(docs.len(), "building trees");
    for &d in docs {
        let units = index.doc_units[d].clone();
        let texts: Vec<&str> = units.clone().map(|u| index.text(corpus, u)).collect();
        let AttentionSource::TokenBlocks { window_tokens } = config.attention;
        let attention = encoder.unit_attention(&texts, window_tokens, batch_size);
        let n = attention.n;
        let a = Tensor::<DefaultBackend, 4>::from_data(TensorData::new(attention.values, [attention.layers, attention.heads, n, n]), device);
        let m = aggregator.forward(a).into_data().to_vec::<f32>().expect("f32");
        let dim = encoder.dim();
        let leaf_embeddings: Vec<f32> = units.clone().flat_map(|u| unit_embeddings[u].iter().copied()).collect();
        let tree = Tree::build(index.units[units].to_vec(), &leaf_embeddings, dim, &Similarity { n, values: &m });
        arbor_eval::tree_io::save(&tree, &trees_dir.join(format!("{d}.tree")))?;
        trees[d] = Some(tree);
        pb.inc(1);
    }
    pb.finish_and_clear();
    Ok(trees)
}
