//! The fine-tuning step's encoder on the CPU: the `tape` module's hand-written forward and backward passes
//! registered with Burn's autodiff as three operations (the embeddings, each transformer block, the
//! pooling), so a trainer's loss, its `backward()` and its optimizer run as before while the encoder's
//! share of the step runs on the inference kernel's `gemm` over packed sequences (no padding) instead of
//! Burn's ndarray operations one by one. The parameters' gradients land on the same parameters, equal to
//! Burn's own to float rounding (`tests/integration/grad.rs`).
//!
//! It applies when the backend is `Autodiff<NdArray<f32>>` (the default CPU build) and every dense layer
//! and layer norm has its bias (every BERT checkpoint does); [`pool_ids`] says `None` otherwise and the
//! caller runs the Burn module (the GPU builds, other checkpointing strategies).

use std::any::Any;
use std::sync::Arc;

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::ndarray::NdArrayTensor;
use burn::backend::{Autodiff, NdArray};
use burn::module::Param;
use burn::nn::{LayerNorm, Linear};
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{Tensor, TensorData, TensorPrimitive};

use super::attention::Relative;
use super::cpu::{CpuBert, Layer};
use super::tape::{self, DenseGrads, EmbeddingTape, LayerTape, NormGrads, PoolTape};
use super::{Bert, FrozenLayers};
use crate::pooling::Pooling;

type Inner = NdArray<f32>;
type Ad = Autodiff<Inner>;

/// Pooled (by `pooling`), L2-normalised vectors of token-id rows through `bert` with gradients, by the
/// hand-written passes: above `frozen`'s blocks when given (their token states computed without a graph),
/// else through every block and the embeddings. `None` when `B` is not the CPU's autodiff backend or the
/// encoder lacks a bias: the caller then runs the Burn module.
///
/// # Shapes
/// - returns `[rows, hidden]`
pub fn pool_ids<B: Backend>(bert: &Bert<B>, frozen: Option<&FrozenLayers>, rows: &[&[u32]], eps: f64, pooling: Pooling) -> Option<Tensor<B, 2>> {
    let bert = (bert as &dyn Any).downcast_ref::<Bert<Ad>>()?;
    if rows.is_empty() || rows.iter().any(|r| r.is_empty()) || !has_every_bias(bert) {
        return None;
    }
    let pooled = pool(bert, frozen, rows, eps, pooling);
    (Box::new(pooled) as Box<dyn Any>).downcast::<Tensor<B, 2>>().ok().map(|t| *t)
}

fn has_every_bias(bert: &Bert<Ad>) -> bool {
    let linear = |l: &Linear<Ad>| l.bias.is_some();
    let norm = |n: &LayerNorm<Ad>| n.beta.is_some();
    norm(&bert.embeddings.layer_norm)
        && bert.layers.iter().all(|l| {
            [&l.query, &l.key, &l.value, &l.attention_output, &l.intermediate, &l.output].into_iter().all(linear)
                && norm(&l.attention_norm)
                && norm(&l.output_norm)
                && l.num_heads > 0
        })
}

fn pool(bert: &Bert<Ad>, frozen: Option<&FrozenLayers>, rows: &[&[u32]], eps: f64, pooling: Pooling) -> Tensor<Ad, 2> {
    let lengths: Vec<usize> = rows.iter().map(|r| r.len()).collect();
    let hidden = bert.embeddings.word_embeddings.weight.dims()[1];
    let (mut x, from) = match frozen {
        Some(f) => {
            let states = f.lower_states(rows);
            let t = states.len() / hidden;
            (primitive(Tensor::<Ad, 2>::from_data(TensorData::new(states, [t, hidden]), &Default::default())), f.layers())
        }
        None => (embed(bert, CpuBert::lower(bert, eps, 0), rows), 0),
    };
    let e = &bert.embeddings;
    let max_len = e.position_embeddings.weight.dims()[0].saturating_sub(e.position_offset);
    let relative = bert.relative_attention_bias.as_ref().map(|t| (param(&t.weight), Relative::of(bert, max_len).expect("the table is there")));
    for layer in &bert.layers[from..] {
        x = block(layer, x, &lengths, eps, relative.clone());
    }
    Tensor::from_primitive(TensorPrimitive::Float(pool_op(x, lengths, hidden, pooling)))
}

fn primitive<const D: usize>(t: Tensor<Ad, D>) -> FloatTensor<Ad> {
    t.into_primitive().tensor()
}

fn param<const D: usize>(p: &Param<Tensor<Ad, D>>) -> FloatTensor<Ad> {
    primitive(p.val())
}

/// The parent in the place of a parameter the family does not have (MPNet's token types, every other
/// family's relative position bias): a constant, which needs no gradient, so none is registered for it.
fn absent() -> FloatTensor<Ad> {
    primitive(Tensor::<Ad, 2>::zeros([1, 1], &Default::default()))
}

/// A float tensor's values, row-major.
fn values(t: &FloatTensor<Inner>) -> Vec<f32> {
    ndarray_slice(t).map_or_else(
        || Tensor::<Inner, 1>::from_primitive(TensorPrimitive::Float(t.clone())).into_data().to_vec::<f32>().expect("f32"),
        <[f32]>::to_vec,
    )
}

/// The f32 buffer of an ndarray tensor in standard layout, borrowed. Burn's `into_data` copies a tensor
/// that something else also holds (a parameter, a gradient still referenced) one element at a time
/// through its dynamic-rank iterator, about 25 ns an element here: 0.3 s for the word embeddings alone.
fn ndarray_slice(t: &FloatTensor<Inner>) -> Option<&[f32]> {
    match t {
        // `to_slice` answers only for a view in standard layout: exactly its elements, in order.
        NdArrayTensor::F32(storage) => storage.view().to_slice(),
        _ => None,
    }
}

/// A tensor's values, row-major, by a plain copy of its buffer where it is an ndarray tensor in standard
/// layout (on the CPU backend, with or without autodiff), else by Burn's `into_data`.
pub(super) fn host_values<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f32> {
    let any = &t as &dyn Any;
    let fast = match (any.downcast_ref::<Tensor<Inner, D>>(), any.downcast_ref::<Tensor<Ad, D>>()) {
        (Some(t), _) => ndarray_slice(&t.clone().into_primitive().tensor()).map(<[f32]>::to_vec),
        (_, Some(t)) => ndarray_slice(&t.clone().into_primitive().tensor().primitive).map(<[f32]>::to_vec),
        _ => None,
    };
    fast.unwrap_or_else(|| t.into_data().convert::<f32>().to_vec::<f32>().expect("f32 after convert"))
}

/// Values of the given shape as a tensor of the inner backend (what a gradient is registered as).
fn tensor(values: Vec<f32>, shape: &[usize]) -> FloatTensor<Inner> {
    <Inner as burn::tensor::ops::FloatTensorOps<Inner>>::float_from_data(TensorData::new(values, shape.to_vec()), &Default::default())
}

/// `out`, computed from `parents` by `op`, as an autodiff tensor: with `op`'s backward step and its state
/// (built only then) when a parent needs a gradient, else as a plain result.
fn record<O, S, const N: usize>(op: O, parents: &[FloatTensor<Ad>; N], state: impl FnOnce() -> S, out: FloatTensor<Inner>) -> FloatTensor<Ad>
where
    O: Backward<Inner, N, State = Arc<S>>,
    S: Send + Sync + std::fmt::Debug + 'static,
{
    match op.prepare::<NoCheckpointing>(parents.each_ref().map(|p| p.node.clone())).compute_bound().stateful() {
        OpsKind::Tracked(prep) => prep.finish(Arc::new(state()), out),
        OpsKind::UnTracked(prep) => prep.finish(out),
    }
}

/// Registers each parent's gradient (values and shape) with `grads`, skipping parents that need none.
macro_rules! register {
    ($parents:expr, $grads:expr, $values:expr) => {
        for (parent, (values, shape)) in $parents.into_iter().zip($values) {
            if let Some(node) = parent {
                $grads.register::<Inner>(node.id, tensor(values, &shape));
            }
        }
    };
}

fn dense(g: DenseGrads) -> [(Vec<f32>, Vec<usize>); 2] {
    let output = g.bias.len();
    let input = g.weight.len() / output;
    [(g.weight, vec![input, output]), (g.bias, vec![output])]
}

fn norm(g: NormGrads) -> [(Vec<f32>, Vec<usize>); 2] {
    let h = g.gamma.len();
    [(g.gamma, vec![h]), (g.beta, vec![h])]
}

/// The embeddings as an operation: parents word, position and token-type tables (a constant without
/// token types), the norm's γ and β.
#[derive(Debug)]
struct Embed;

#[derive(Debug)]
struct EmbedState {
    bert: CpuBert,
    tape: EmbeddingTape,
    token_types: usize,
}

impl Backward<Inner, 5> for Embed {
    type State = Arc<EmbedState>;

    fn backward(self, ops: Ops<Self::State, 5>, grads: &mut Gradients, _: &mut Checkpointer) {
        let dy = values(&grads.consume::<Inner>(&ops.node));
        let s = &ops.state;
        let (h, bert) = (s.bert.hidden, &s.bert);
        let g = tape::embeddings_backward(bert, &s.tape, dy);
        let mut token_type = g.token_type;
        token_type.resize(s.token_types * h, 0.0);
        let [gamma, beta] = norm(g.norm);
        let values = [
            (g.word, vec![bert.word.len() / h, h]),
            (g.position, vec![bert.position.len() / h, h]),
            (token_type, vec![s.token_types, h]),
            gamma,
            beta,
        ];
        register!(ops.parents, grads, values);
    }
}

fn embed(bert: &Bert<Ad>, cpu: CpuBert, rows: &[&[u32]]) -> FloatTensor<Ad> {
    let e = &bert.embeddings;
    let norm = &e.layer_norm;
    let beta = norm.beta.as_ref().expect("has_every_bias");
    let parents = [
        param(&e.word_embeddings.weight),
        param(&e.position_embeddings.weight),
        e.token_type_embeddings.as_ref().map_or_else(absent, |t| param(&t.weight)),
        param(&norm.gamma),
        param(beta),
    ];
    let token_types = e.token_type_embeddings.as_ref().map_or(1, |t| t.weight.dims()[0]);
    let (x, tape) = tape::embeddings_forward(&cpu, rows);
    let out = tensor(x, &[tape.tokens(), cpu.hidden]);
    record(Embed, &parents, || EmbedState { bert: cpu, tape, token_types }, out)
}

/// A transformer block as an operation: parents its input, then query, key, value, attention output
/// (weight, bias each), the attention norm (γ, β), intermediate, output, the output norm, and the relative
/// position bias table every block shares (a constant for a family without one): each block registers
/// its share of that table's gradient, which Burn's gradients add up.
#[derive(Debug)]
struct Block;

#[derive(Debug)]
struct BlockState {
    layer: Layer,
    tape: LayerTape,
    lengths: Vec<usize>,
    heads: usize,
    relative: Option<Relative>,
}

impl Backward<Inner, 18> for Block {
    type State = Arc<BlockState>;

    fn backward(self, ops: Ops<Self::State, 18>, grads: &mut Gradients, _: &mut Checkpointer) {
        let dy = values(&grads.consume::<Inner>(&ops.node));
        let s = &ops.state;
        let h = s.layer.qkv.input;
        let relative = s.relative.as_ref().filter(|_| ops.parents[17].is_some());
        let (dx, g) = tape::layer_backward(&s.layer, &s.tape, (&s.lengths, s.heads), relative, dy, ops.parents[0].is_some());
        // Query, key and value were one product: their columns of the fused gradient.
        let column = |k: usize| {
            let weight = g.qkv.weight.chunks_exact(3 * h).flat_map(|row| row[k * h..(k + 1) * h].iter().copied()).collect();
            DenseGrads { weight, bias: g.qkv.bias[k * h..(k + 1) * h].to_vec() }
        };
        let t = s.lengths.iter().sum::<usize>();
        let [qw, qb] = dense(column(0));
        let [kw, kb] = dense(column(1));
        let [vw, vb] = dense(column(2));
        let [aw, ab] = dense(g.attention_output);
        let [ag, an] = norm(g.attention_norm);
        let [iw, ib] = dense(g.intermediate);
        let [ow, ob] = dense(g.output);
        let [og, on] = norm(g.output_norm);
        let input = (dx.unwrap_or_default(), vec![t, h]);
        let table = (g.relative.unwrap_or_default(), vec![relative.map_or(0, |r| r.table.len() / r.heads), s.heads]);
        register!(ops.parents, grads, [input, qw, qb, kw, kb, vw, vb, aw, ab, ag, an, iw, ib, ow, ob, og, on, table]);
    }
}

fn block(
    layer: &super::model::BertLayer<Ad>,
    x: FloatTensor<Ad>,
    lengths: &[usize],
    eps: f64,
    relative: Option<(FloatTensor<Ad>, Relative)>,
) -> FloatTensor<Ad> {
    let bias = |l: &Linear<Ad>| param(l.bias.as_ref().expect("has_every_bias"));
    let beta = |n: &LayerNorm<Ad>| param(n.beta.as_ref().expect("has_every_bias"));
    let input = values(&x.primitive);
    let parents = [
        x,
        param(&layer.query.weight),
        bias(&layer.query),
        param(&layer.key.weight),
        bias(&layer.key),
        param(&layer.value.weight),
        bias(&layer.value),
        param(&layer.attention_output.weight),
        bias(&layer.attention_output),
        param(&layer.attention_norm.gamma),
        beta(&layer.attention_norm),
        param(&layer.intermediate.weight),
        bias(&layer.intermediate),
        param(&layer.output.weight),
        bias(&layer.output),
        param(&layer.output_norm.gamma),
        beta(&layer.output_norm),
        relative.as_ref().map_or_else(absent, |(table, _)| table.clone()),
    ];
    let relative = relative.map(|(_, r)| r);
    let cpu = Layer::of(layer, eps);
    let h = cpu.qkv.input;
    let (y, tape) = tape::layer_forward(&cpu, input, lengths, layer.num_heads, relative.as_ref());
    let out = tensor(y, &[lengths.iter().sum(), h]);
    record(Block, &parents, || BlockState { layer: cpu, tape, lengths: lengths.to_vec(), heads: layer.num_heads, relative }, out)
}

/// Pooling and L2 normalisation as an operation: parent the last block's token states.
#[derive(Debug)]
struct Pool;

#[derive(Debug)]
struct PoolState {
    tape: PoolTape,
    lengths: Vec<usize>,
    hidden: usize,
    pooling: Pooling,
}

impl Backward<Inner, 1> for Pool {
    type State = Arc<PoolState>;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let dy = values(&grads.consume::<Inner>(&ops.node));
        let s = &ops.state;
        let dstates = tape::pool_backward(&s.tape, &s.lengths, s.hidden, s.pooling, &dy);
        let t = s.lengths.iter().sum::<usize>();
        register!(ops.parents, grads, [(dstates, vec![t, s.hidden])]);
    }
}

fn pool_op(x: FloatTensor<Ad>, lengths: Vec<usize>, hidden: usize, pooling: Pooling) -> FloatTensor<Ad> {
    let (y, tape) = tape::pool_forward(&values(&x.primitive), &lengths, hidden, pooling);
    let out = tensor(y, &[lengths.len(), hidden]);
    record(Pool, &[x], || PoolState { tape, lengths, hidden, pooling }, out)
}
