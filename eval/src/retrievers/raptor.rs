//! RAPTOR (Sarthi et al., arXiv:2401.18059; RAPTOR's public code, `cluster_tree_builder.py` and `cluster_utils.py`): a tree of
//! recursive summaries over one document's leaf chunks, and its two retrieval modes.
//!
//! Building (RAPTOR, Section 3):
//! ```text
//! layer 0 = the leaf chunks (about 100 tokens each)
//! for layer in 1..=num_layers:
//!     stop if the previous layer has <= reduction_dimension + 1 nodes           (RAPTOR: "cannot create more layers")
//!     clusters = global soft clustering of the previous layer ([`crate::structures::gmm`]); each global cluster with
//!                more than reduction_dimension + 1 members clustered again locally
//!     a cluster with more than max_length_in_cluster tokens is clustered again (when that splits it)
//!     each cluster becomes one node: its summary (the caller's summariser) and the summary's embedding
//! ```
//! A node hands on its summary: for an extractive summary, the document spans it is made of; for a
//! generated one, the spans of the leaves it summarises (the text a generated summary cannot point into).
//!
//! Retrieval (RAPTOR, Section 3 and Figure 2):
//! - collapsed tree: every node of every layer ranked by cosine with the query (the token budget of
//!   [`crate::scoring::budget`] then takes them in rank order, RAPTOR's 2,000 tokens);
//! - tree traversal: the top `top_k` nodes of the top layer, then the top `top_k` of their children, down
//!   to the leaves; the selected nodes in the order selected, then the other leaves by cosine.

use std::borrow::Cow;

use arbor_datasets::{DocSpan, Span};

use crate::index::{Chunks, Item, NodeRef, QueryInput, Retriever, top_k};
use crate::retrievers::document_level::{DocumentVector, mean, root_and_leaves};
use crate::retrievers::flat::dot;
use crate::structures::gmm::{ClusterParams, principal_components, reduced_dimension, soft_clusters};

/// RAPTOR's tree-building parameters (its defaults in [`RaptorParams::default`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RaptorParams {
    pub cluster: ClusterParams,
    pub max_length_in_cluster: usize,
    pub num_layers: usize,
}

impl Default for RaptorParams {
    fn default() -> Self {
        RaptorParams {
            cluster: ClusterParams { reduction_dimension: 10, max_clusters: 50, threshold: 0.1 },
            max_length_in_cluster: 3500,
            num_layers: 5,
        }
    }
}

/// One node: what it hands on, its children (empty for a leaf), its layer and its text's tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub spans: Vec<Span>,
    pub children: Vec<usize>,
    pub layer: usize,
    pub tokens: usize,
}

/// A summary of some leaves: its text (what is embedded), what it hands on, and its tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub text: String,
    pub spans: Vec<Span>,
    pub tokens: usize,
}

/// One document's RAPTOR tree: nodes 0..leaves are the leaf chunks.
#[derive(Debug, Clone, PartialEq)]
pub struct RaptorTree {
    pub nodes: Vec<Node>,
    pub embeddings: Vec<Vec<f32>>,
    /// The number of layers above the leaves.
    pub layers: usize,
}

impl RaptorTree {
    /// Builds the tree over leaf chunks (`spans`, unit-norm `embeddings`, `tokens`); `summarise` writes the
    /// summary of the leaves under a cluster (their spans, in text order), `embed` embeds summaries.
    pub fn build<E>(
        spans: &[Span],
        embeddings: Vec<Vec<f32>>,
        tokens: &[usize],
        p: &RaptorParams,
        summarise: &mut dyn FnMut(&[Span]) -> Result<Summary, E>,
        embed: &mut dyn FnMut(&[String]) -> Result<Vec<Vec<f32>>, E>,
    ) -> Result<Self, E> {
        let mut nodes: Vec<Node> = spans.iter().zip(tokens).map(|(&s, &t)| Node { spans: vec![s], children: vec![], layer: 0, tokens: t }).collect();
        let mut tree = RaptorTree { nodes: Vec::new(), embeddings, layers: 0 };
        let mut current: Vec<usize> = (0..nodes.len()).collect();
        for layer in 1..=p.num_layers {
            if current.len() <= p.cluster.reduction_dimension + 1 {
                break;
            }
            let vectors: Vec<&[f32]> = current.iter().map(|&n| tree.embeddings[n].as_slice()).collect();
            let sizes: Vec<usize> = current.iter().map(|&n| nodes[n].tokens).collect();
            let clusters = cluster_nodes(&vectors, &sizes, p);
            let mut summaries = Vec::with_capacity(clusters.len());
            for members in &clusters {
                let mut under: Vec<Span> = Vec::new();
                for &m in members {
                    leaves_under(&nodes, current[m], &mut under);
                }
                under.sort();
                under.dedup();
                summaries.push(summarise(&under)?);
            }
            let texts: Vec<String> = summaries.iter().map(|s| s.text.clone()).collect();
            tree.embeddings.extend(embed(&texts)?);
            let first = nodes.len();
            for (members, s) in clusters.iter().zip(summaries) {
                nodes.push(Node { spans: s.spans, children: members.iter().map(|&m| current[m]).collect(), layer, tokens: s.tokens });
            }
            current = (first..nodes.len()).collect();
            tree.layers = layer;
        }
        tree.nodes = nodes;
        Ok(tree)
    }

    /// The leaf chunks' spans, in order.
    pub fn leaf_spans(&self) -> Vec<Span> {
        self.nodes.iter().filter(|n| n.layer == 0).map(|n| n.spans[0]).collect()
    }

    /// The tree's vector of its document for a document level ([`crate::retrievers::document_level`]): its
    /// leaves' mean, its top layer's mean (the root: one node where the clustering ended in one), or both;
    /// `None` for a summary's, which the tree does not hold.
    pub fn document_vector(&self, vector: DocumentVector) -> Option<Vec<f32>> {
        let dim = self.embeddings.first().map_or(0, Vec::len);
        let layer = |l: usize| mean(self.nodes.iter().zip(&self.embeddings).filter(|(n, _)| n.layer == l).map(|(_, e)| e), dim);
        match vector {
            DocumentVector::LeafMean => Some(layer(0)),
            DocumentVector::Root => Some(layer(self.layers)),
            DocumentVector::RootAndLeaves => Some(root_and_leaves(&layer(self.layers), &layer(0))),
            DocumentVector::Summary => None,
        }
    }

    /// Node counts per layer, from the leaves up.
    pub fn layer_sizes(&self) -> Vec<usize> {
        let mut sizes = vec![0; self.layers + 1];
        self.nodes.iter().for_each(|n| sizes[n.layer] += 1);
        sizes
    }
}

/// The leaf spans under `node`.
fn leaves_under(nodes: &[Node], node: usize, out: &mut Vec<Span>) {
    match nodes[node].children.is_empty() {
        true => out.extend(&nodes[node].spans),
        false => nodes[node].children.iter().for_each(|&c| leaves_under(nodes, c, out)),
    }
}

/// How many times an oversized cluster is clustered again, at most (RAPTOR sets no limit; its soft
/// clusters can overlap so much that each round removes a single member).
const MAX_RECLUSTER_DEPTH: usize = 3;

/// RAPTOR's clustering of one layer (`RAPTOR_Clustering.perform_clustering`): global soft clusters, local
/// clusters inside the large ones, and clusters over `max_length_in_cluster` tokens clustered again (at
/// most `MAX_RECLUSTER_DEPTH` times).
pub fn cluster_nodes(vectors: &[&[f32]], tokens: &[usize], p: &RaptorParams) -> Vec<Vec<usize>> {
    cluster_within(vectors, tokens, p, 0)
}

fn cluster_within(vectors: &[&[f32]], tokens: &[usize], p: &RaptorParams, depth: usize) -> Vec<Vec<usize>> {
    let dim = p.cluster.reduction_dimension;
    let owned: Vec<Vec<f32>> = vectors.iter().map(|v| v.to_vec()).collect();
    let (k, labels) = soft_clusters(&principal_components(&owned, reduced_dimension(vectors.len(), dim)), &p.cluster);
    let mut clusters: Vec<Vec<usize>> = Vec::new();
    for g in 0..k {
        let members: Vec<usize> = (0..vectors.len()).filter(|&i| labels[i].contains(&g)).collect();
        if members.len() <= dim + 1 {
            clusters.push(members);
            continue;
        }
        let local: Vec<Vec<f32>> = members.iter().map(|&i| owned[i].clone()).collect();
        let (kl, local_labels) = soft_clusters(&principal_components(&local, dim), &p.cluster);
        for l in 0..kl {
            clusters.push((0..members.len()).filter(|&i| local_labels[i].contains(&l)).map(|i| members[i]).collect());
        }
    }
    clusters.retain(|c| !c.is_empty());
    let mut out = Vec::new();
    for cluster in clusters {
        let size: usize = cluster.iter().map(|&i| tokens[i]).sum();
        if cluster.len() == 1 || size <= p.max_length_in_cluster || depth == MAX_RECLUSTER_DEPTH {
            out.push(cluster);
            continue;
        }
        let sub_vectors: Vec<&[f32]> = cluster.iter().map(|&i| vectors[i]).collect();
        let sub_tokens: Vec<usize> = cluster.iter().map(|&i| tokens[i]).collect();
        let split = cluster_within(&sub_vectors, &sub_tokens, p, depth + 1);
        // Only a split into smaller clusters is taken (soft labels can give every member to every part).
        if split.len() <= 1 || split.iter().any(|c| c.len() == cluster.len()) {
            out.push(cluster);
        } else {
            out.extend(split.into_iter().map(|c| c.into_iter().map(|i| cluster[i]).collect()));
        }
    }
    out
}

/// How a RAPTOR tree is searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RaptorSearch {
    Collapsed,
    Traversal { top_k: usize },
}

/// RAPTOR retrieval over one tree per document.
pub struct RaptorRetriever<'a> {
    pub name: String,
    pub trees: Vec<Option<RaptorTree>>,
    pub leaves: Cow<'a, Chunks>,
    pub search: RaptorSearch,
}

impl Retriever for RaptorRetriever<'_> {
    fn name(&self) -> &str {
        &self.name
    }

    fn leaves(&self) -> &Chunks {
        &self.leaves
    }

    fn retrieve(&self, query: &QueryInput, k: usize) -> Vec<Item> {
        let q = query.embedding.as_deref().expect("RAPTOR needs a query embedding");
        let docs = query.docs.clone();
        let trees = || docs.iter().filter_map(|&d| self.trees[d].as_ref().map(|t| (d, t)));
        let score = |d: usize, n: usize| dot(q, &self.trees[d].as_ref().expect("indexed").embeddings[n]);
        let (mut refs, mut scores) = (Vec::new(), Vec::new());
        let mut push = |refs: &mut Vec<NodeRef>, d, n| {
            refs.push(NodeRef { doc: d, node: n });
            scores.push(score(d, n));
        };
        match self.search {
            RaptorSearch::Collapsed => trees().for_each(|(d, t)| (0..t.nodes.len()).for_each(|n| push(&mut refs, d, n))),
            RaptorSearch::Traversal { top_k: width } => {
                let mut frontier: Vec<NodeRef> = trees()
                    .flat_map(|(d, t)| (0..t.nodes.len()).filter(move |&n| t.nodes[n].layer == t.layers).map(move |n| NodeRef { doc: d, node: n }))
                    .collect();
                let mut chosen: Vec<NodeRef> = Vec::new();
                while !frontier.is_empty() {
                    let picked = top_k(frontier.iter().enumerate().map(|(i, r)| (i, score(r.doc, r.node))), width);
                    let picked: Vec<NodeRef> = picked.into_iter().map(|(i, _)| frontier[i]).collect();
                    frontier = picked.iter().flat_map(|r| self.node(*r).children.iter().map(|&c| NodeRef { doc: r.doc, node: c })).collect();
                    frontier.sort_by_key(|r| (r.doc, r.node));
                    frontier.dedup();
                    frontier.retain(|r| !chosen.contains(r) && !picked.contains(r));
                    chosen.extend(picked);
                }
                let leaves = trees()
                    .flat_map(|(d, t)| (0..t.nodes.len()).filter(|&n| t.nodes[n].children.is_empty()).map(move |n| NodeRef { doc: d, node: n }));
                let rest: Vec<NodeRef> = leaves.filter(|r| !chosen.contains(r)).collect();
                let ranked_rest = top_k(rest.iter().enumerate().map(|(i, r)| (i, score(r.doc, r.node))), k.saturating_sub(chosen.len()));
                chosen.extend(ranked_rest.into_iter().map(|(i, _)| rest[i]));
                return chosen.into_iter().take(k.max(1)).map(|r| self.item(r, score(r.doc, r.node))).collect();
            }
        }
        top_k(scores.iter().copied().enumerate(), k).into_iter().map(|(i, s)| self.item(refs[i], s)).collect()
    }

    fn layer(&self, item: &Item) -> Option<usize> {
        Some(self.node(item.node?).layer)
    }

    fn children(&self, query: &QueryInput, item: &Item) -> Option<Vec<Item>> {
        let r = item.node?;
        let children = &self.node(r).children;
        if children.is_empty() {
            return None;
        }
        let q = query.embedding.as_deref().expect("RAPTOR needs a query embedding");
        let tree = self.trees[r.doc].as_ref()?;
        let scored = children.iter().map(|&c| (c, dot(q, &tree.embeddings[c])));
        Some(top_k(scored, children.len()).into_iter().map(|(c, s)| self.item(NodeRef { doc: r.doc, node: c }, s)).collect())
    }
}

impl RaptorRetriever<'_> {
    fn node(&self, r: NodeRef) -> &Node {
        &self.trees[r.doc].as_ref().expect("an item comes from an indexed document").nodes[r.node]
    }

    fn item(&self, r: NodeRef, score: f32) -> Item {
        Item { spans: self.node(r).spans.iter().map(|&span| DocSpan { doc: r.doc, span }).collect(), score, node: Some(r) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` leaves in two topics (x for the first half, y for the rest), each 10 tokens.
    fn leaves(n: usize) -> (Vec<Span>, Vec<Vec<f32>>, Vec<usize>) {
        let spans = (0..n).map(|i| Span::new(10 * i, 10 * i + 9)).collect();
        let embeddings = (0..n)
            .map(|i| {
                let wobble = ((i % 5) as f32 + 1.0) * 0.02;
                let v = if i < n / 2 { [1.0, wobble, 0.0] } else { [0.0, wobble, 1.0] };
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter().map(|x| x / norm).collect()
            })
            .collect();
        (spans, embeddings, vec![10; n])
    }

    /// A stand-in summariser: a cluster's summary is its first leaf, named by that leaf's topic, and
    /// embedded as the topic's axis.
    fn build(n: usize, p: &RaptorParams) -> RaptorTree {
        let (spans, embeddings, tokens) = leaves(n);
        let mut summarise = |under: &[Span]| -> Result<Summary, ()> {
            let topic = if under[0].start / 10 < n / 2 { "x" } else { "y" };
            Ok(Summary { text: topic.into(), spans: vec![under[0]], tokens: 10 })
        };
        let mut embed = |texts: &[String]| -> Result<Vec<Vec<f32>>, ()> {
            Ok(texts.iter().map(|t| if t == "x" { vec![1.0, 0.0, 0.0] } else { vec![0.0, 0.0, 1.0] }).collect())
        };
        RaptorTree::build(&spans, embeddings, &tokens, p, &mut summarise, &mut embed).unwrap()
    }

    #[test]
    fn one_two_and_three_leaves_make_a_tree_of_leaves() {
        for n in 1..=3 {
            let tree = build(n, &RaptorParams::default());
            assert_eq!((tree.layers, tree.nodes.len()), (0, n), "{n} leaves: too few to cluster (RAPTOR stops at 11)");
        }
        // With a reduction dimension of 0 RAPTOR would cluster even these: they still work.
        let p = RaptorParams { cluster: ClusterParams { reduction_dimension: 0, ..RaptorParams::default().cluster }, ..RaptorParams::default() };
        for n in 2..=3 {
            let tree = build(n, &p);
            assert!(tree.layers >= 1 && tree.nodes.len() > n, "{n} leaves cluster: {:?}", tree.layer_sizes());
        }
    }

    #[test]
    fn two_topics_make_two_summaries_under_a_root() {
        let tree = build(30, &RaptorParams::default());
        assert_eq!(tree.layer_sizes()[..2], [30, 2]);
        let kids: Vec<Vec<usize>> = tree.nodes[30..32].iter().map(|n| n.children.clone()).collect();
        assert!(kids.contains(&(0..15).collect()) && kids.contains(&(15..30).collect()), "{kids:?}");
    }

    /// Issue 62: a document's vector for the level above the trees, by hand on a tree of two leaves under
    /// one summary: the leaves' mean, the top layer's (the root's), both normalised and averaged.
    #[test]
    fn a_document_vector_is_the_leaves_mean_the_top_layer_or_both() {
        let node = |layer, children: Vec<usize>| Node { spans: vec![Span::new(0, 1)], children, layer, tokens: 1 };
        let tree = RaptorTree {
            nodes: vec![node(0, vec![]), node(0, vec![]), node(1, vec![0, 1])],
            embeddings: vec![vec![1.0, 0.0], vec![0.0, 1.0], vec![0.0, 2.0]],
            layers: 1,
        };
        assert_eq!(tree.document_vector(DocumentVector::LeafMean), Some(vec![0.5, 0.5]));
        assert_eq!(tree.document_vector(DocumentVector::Root), Some(vec![0.0, 2.0]));
        let both = tree.document_vector(DocumentVector::RootAndLeaves).unwrap();
        let h = 0.5f32.sqrt();
        assert!((both[0] - h / 2.0).abs() < 1e-6 && (both[1] - (1.0 + h) / 2.0).abs() < 1e-6, "{both:?}");
        assert_eq!(tree.document_vector(DocumentVector::Summary), None);
    }

    #[test]
    fn collapsed_ranks_every_node_and_traversal_descends() {
        let tree = build(30, &RaptorParams::default());
        let chunks = Chunks::from_docs([tree.nodes[..30].iter().map(|n| n.spans[0]).collect::<Vec<_>>()]);
        let y_summary = (30..32).find(|&n| tree.nodes[n].children.contains(&20)).unwrap();
        let query = QueryInput { text: String::new(), docs: vec![0], embedding: Some(vec![0.0, 0.0, 1.0]) };
        let collapsed =
            RaptorRetriever { name: "r".into(), trees: vec![Some(tree)], leaves: Cow::Borrowed(&chunks), search: RaptorSearch::Collapsed };
        let items = collapsed.retrieve(&query, 5);
        assert_eq!(items[0].node.unwrap().node, y_summary, "the y summary is exactly the query");
        let kids = collapsed.children(&query, &items[0]).unwrap();
        assert_eq!(kids.len(), 15);
        let traversal = RaptorRetriever { search: RaptorSearch::Traversal { top_k: 1 }, ..collapsed };
        let items = traversal.retrieve(&query, 10);
        assert_eq!(items.len(), 10);
        assert_eq!(items[0].node.unwrap().node, y_summary);
        assert!(items[1].node.unwrap().node >= 15 && items[1].node.unwrap().node < 30, "then a y leaf");
    }
}

#[cfg(test)]
mod diffuse {
    use super::*;

    #[test]
    fn oversized_diffuse_clusters_end_and_cover_every_node() {
        let mut state = 7u64;
        let mut next = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 11) as f32 / (1u64 << 53) as f32) - 0.5
        };
        // 100 tokens per node: every cluster of more than 35 nodes is over RAPTOR's 3,500 and clustered again.
        for n in [12usize, 35, 80] {
            let vectors: Vec<Vec<f32>> = (0..n).map(|_| (0..384).map(|_| next()).collect()).collect();
            let refs: Vec<&[f32]> = vectors.iter().map(|v| v.as_slice()).collect();
            let clusters = cluster_nodes(&refs, &vec![100; n], &RaptorParams::default());
            assert!((0..n).all(|i| clusters.iter().any(|c| c.contains(&i))), "n = {n}: {clusters:?}");
        }
    }
}
