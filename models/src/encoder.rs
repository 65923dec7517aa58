//! Sentence embeddings as sentence-transformers computes them (Reimers & Gurevych, 2019): BERT token
//! states, pooled (mean over the attention mask by default; CLS or the last token as the folder or the
//! experiment says, [`crate::pooling`]), L2-normalised; each text read after its role's prompt (none by
//! default); inputs truncated at `max_seq_length` (256 for all-MiniLM-L6-v2, from its
//! sentence_bert_config.json). Texts are sorted by length and padded per batch, so little compute goes to
//! padding; results come back in input order.

use std::path::Path;

use burn::tensor::backend::Backend;
use burn::tensor::{Bool, Int, Tensor, TensorData};
use serde::{Deserialize, Serialize};
use tokenizers::Tokenizer;

use crate::bert::{Bert, BertConfig, CpuBert, Precision, load_bert};
use crate::error::ModelError;
use crate::hub::{ModelDir, ModelSource, resolve};
use crate::pipeline::Pipeline;
use crate::pooling::{Pooling, Prompts, Role};

/// How to build the sentence encoder. Lives in the experiment file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EncoderConfig {
    pub model: ModelSource,
    /// Token limit per text, special tokens included; `None` reads sentence_bert_config.json (else 512).
    pub max_seq_length: Option<usize>,
    pub batch_size: usize,
    /// How token states become a vector; `None` reads the folder's `1_Pooling` (mean without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pooling: Option<Pooling>,
    /// The text read before each query and passage; `None` reads the folder's
    /// config_sentence_transformers.json (none without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompts: Option<Prompts>,
}

impl Default for EncoderConfig {
    fn default() -> Self {
        EncoderConfig { model: ModelSource::default(), max_seq_length: None, batch_size: 32, pooling: None, prompts: None }
    }
}

/// A pretrained BERT-family encoder with its tokenizer.
pub struct SentenceEncoder<B: Backend> {
    pub bert: Bert<B>,
    pub config: BertConfig,
    /// [`fingerprint`] of the model as loaded: what artefacts computed with it are keyed by.
    pub fingerprint: String,
    /// What [`SentenceEncoder::embed`] runs: the same weights in the CPU kernel, or Burn's module on a GPU.
    pub(crate) kernel: Kernel<B>,
    tokenizer: Tokenizer,
    max_seq_length: usize,
    /// The pooling and prompts in use (the folder's, or the experiment's).
    pub pipeline: Pipeline,
    device: B::Device,
}

/// A digest of the encoder an [`EncoderConfig`] loads (its weights, tokenizer and config files, its token
/// limit, its pooling and prompts), without loading the weights.
pub fn fingerprint(config: &EncoderConfig) -> Result<String, ModelError> {
    let dir = resolve(&config.model)?;
    let bert = read_config(&dir.path)?;
    let pipeline = Pipeline::resolve(&dir.path, config)?;
    dir.fingerprint(max_len(&dir.path, config.max_seq_length, &bert)?, KERNEL, &pipeline.key())
}

/// A model folder's config.json, checked (an error names the file).
pub fn read_config(dir: &Path) -> Result<BertConfig, ModelError> {
    let path = dir.join("config.json");
    let text = std::fs::read_to_string(&path).map_err(|e| ModelError::io(&path, e))?;
    let config: BertConfig = serde_json::from_str(&text).map_err(|e| ModelError::weights(&path, e.to_string()))?;
    config.check().map_err(|m| ModelError::weights(&path, m))?;
    Ok(config)
}

/// The token limit: as configured, else sentence_bert_config.json's (else 512), at most what the position
/// table holds past the family's offset ([`BertConfig::max_tokens`]).
fn max_len(dir: &Path, configured: Option<usize>, bert: &BertConfig) -> Result<usize, ModelError> {
    let n = match configured {
        Some(n) => n,
        None => sentence_bert_max_len(dir)?.unwrap_or(512),
    };
    Ok(n.min(bert.max_tokens()))
}

/// Token ids of one text, `[CLS] ... [SEP]`, truncated to the encoder's limit.
pub type TokenIds = Vec<u32>;

impl<B: Backend> SentenceEncoder<B> {
    /// Resolves the model (fetching the default one if needed) and loads it on `device`, with the
    /// pooling and prompts its folder asks for or `config` sets ([`Pipeline::resolve`]; a folder arbor
    /// cannot compute is refused).
    pub fn load(config: &EncoderConfig, device: &B::Device) -> Result<Self, ModelError> {
        let dir = resolve(&config.model)?;
        Self::load_dir(&dir, config, device)
    }

    /// Loads a Hugging Face model directory, as [`SentenceEncoder::load`].
    pub fn load_dir(model: &ModelDir, encoder: &EncoderConfig, device: &B::Device) -> Result<Self, ModelError> {
        let dir = model.path.as_path();
        let pipeline = Pipeline::resolve(dir, encoder)?;
        let config = read_config(dir)?;
        let tokenizer_path = dir.join("tokenizer.json");
        let mut tokenizer = Tokenizer::from_file(&tokenizer_path).map_err(|e| ModelError::weights(&tokenizer_path, e.to_string()))?;
        // Truncation is ours (below) and padding is per batch; the file's own settings (often 128, fixed) are dropped.
        tokenizer.with_padding(None);
        tokenizer.with_truncation(None).map_err(|e| ModelError::weights(&tokenizer_path, e.to_string()))?;
        let max_seq_length = max_len(dir, encoder.max_seq_length, &config)?;
        let fingerprint = model.fingerprint(max_seq_length, KERNEL, &pipeline.key())?;
        let bert = load_bert(&config, &dir.join("model.safetensors"), device)?;
        let kernel = Kernel::new(&bert, config.layer_norm_eps, pipeline.pooling);
        Ok(SentenceEncoder { bert, config, fingerprint, kernel, tokenizer, max_seq_length, pipeline, device: device.clone() })
    }

    pub fn dim(&self) -> usize {
        self.config.hidden_size
    }

    pub fn device(&self) -> &B::Device {
        &self.device
    }

    pub fn max_seq_length(&self) -> usize {
        self.max_seq_length
    }

    /// Token ids of passages (units, chunks): [`SentenceEncoder::tokenize_as`] a [`Role::Passage`].
    pub fn tokenize(&self, texts: &[&str]) -> Vec<TokenIds> {
        self.tokenize_as(Role::Passage, texts)
    }

    /// Token ids of queries: [`SentenceEncoder::tokenize_as`] a [`Role::Query`].
    pub fn tokenize_queries(&self, texts: &[&str]) -> Vec<TokenIds> {
        self.tokenize_as(Role::Query, texts)
    }

    /// The prompt read before a text of `role` (empty for none).
    pub fn prompt(&self, role: Role) -> &str {
        self.pipeline.prompts.of(role)
    }

    /// Token ids of texts of `role`, the role's prompt before each, with special tokens, truncated as
    /// sentence-transformers does (keep the head, then `[SEP]`).
    pub fn tokenize_as(&self, role: Role, texts: &[&str]) -> Vec<TokenIds> {
        let prompt = self.prompt(role);
        let prompted: Vec<String>;
        let texts = match prompt.is_empty() {
            true => texts.to_vec(),
            false => {
                prompted = texts.iter().map(|t| format!("{prompt}{t}")).collect();
                prompted.iter().map(String::as_str).collect()
            }
        };
        self.ids_of(texts)
    }

    fn ids_of(&self, texts: Vec<&str>) -> Vec<TokenIds> {
        let encodings = self.tokenizer.encode_batch(texts, true).expect("a BERT tokenizer encodes any text");
        encodings
            .into_iter()
            .map(|e| {
                let mut ids = e.get_ids().to_vec();
                if ids.len() > self.max_seq_length {
                    let last = *ids.last().expect("ids are not empty");
                    ids.truncate(self.max_seq_length - 1);
                    ids.push(last);
                }
                ids
            })
            .collect()
    }

    /// Word-piece ids of each text, without special tokens or truncation.
    pub fn word_pieces(&self, texts: &[&str]) -> Vec<TokenIds> {
        let encodings = self.tokenizer.encode_batch(texts.to_vec(), false).expect("a BERT tokenizer encodes any text");
        encodings.into_iter().map(|e| e.get_ids().to_vec()).collect()
    }

    /// The ids the tokenizer puts around a text (`[CLS]` and `[SEP]` for BERT).
    pub fn special_ids(&self) -> (u32, u32) {
        let ids = &self.ids_of(vec![""])[0];
        (ids[0], *ids.last().expect("the template adds tokens"))
    }

    /// Word-piece tokens in a text, special tokens and truncation left out (what a generator would be handed).
    pub fn count_tokens(&self, text: &str) -> usize {
        self.tokenizer.encode(text, false).map(|e| e.len()).unwrap_or(0)
    }

    /// Where each word piece of each text starts, as byte offsets (special tokens left out): a document's
    /// token starts (`arbor_datasets::TokenStarts`), from which any span's tokens are counted.
    pub fn token_starts(&self, texts: &[&str]) -> Vec<Vec<u32>> {
        let encodings = self.tokenizer.encode_batch(texts.to_vec(), false).expect("a BERT tokenizer encodes any text");
        encodings.iter().map(|e| e.get_offsets().iter().map(|&(start, _)| start as u32).collect()).collect()
    }

    /// The most word pieces of one passage the encoder reads whole: its limit less the special tokens
    /// and the passage prompt's.
    pub fn max_content_tokens(&self) -> usize {
        self.max_seq_length.saturating_sub(self.tokenize(&[""])[0].len())
    }

    /// Embeds passages (units, chunks): unit-norm vectors in input order. `progress` is told how many texts are done.
    pub fn embed(&self, texts: &[&str], batch_size: usize, progress: &mut dyn FnMut(usize)) -> Vec<Vec<f32>> {
        self.embed_as(&self.kernel, Role::Passage, texts, batch_size, progress)
    }

    /// Embeds queries, as [`SentenceEncoder::embed`] passages.
    pub fn embed_queries(&self, texts: &[&str], batch_size: usize, progress: &mut dyn FnMut(usize)) -> Vec<Vec<f32>> {
        self.embed_as(&self.kernel, Role::Query, texts, batch_size, progress)
    }

    /// The kernel that runs this encoder's own weights.
    pub fn kernel(&self) -> &Kernel<B> {
        &self.kernel
    }

    /// The kernel that runs `bert` with this encoder's pooling: its weights fine-tuned elsewhere (a SproutRAG model's).
    pub fn kernel_for(&self, bert: &Bert<B>) -> Kernel<B> {
        Kernel::new(bert, self.config.layer_norm_eps, self.pipeline.pooling)
    }

    /// [`SentenceEncoder::embed`] through `kernel`.
    pub fn embed_with(&self, kernel: &Kernel<B>, texts: &[&str], batch_size: usize, progress: &mut dyn FnMut(usize)) -> Vec<Vec<f32>> {
        self.embed_as(kernel, Role::Passage, texts, batch_size, progress)
    }

    /// The one embedding path (frozen, fine-tuned, `arbor embed`): texts of `role` tokenized after its
    /// prompt and truncated as sentence-transformers does, sorted by length so a batch holds texts of
    /// similar length (the CPU kernel pads nothing; Burn's pads to the batch's longest), embedded by
    /// `kernel`, returned in input order.
    pub fn embed_as(&self, kernel: &Kernel<B>, role: Role, texts: &[&str], batch_size: usize, progress: &mut dyn FnMut(usize)) -> Vec<Vec<f32>> {
        self.embed_ids_with(kernel, &self.tokenize_as(role, texts), batch_size, progress)
    }

    /// [`SentenceEncoder::embed_with`] of token ids already made (a cross-encoder's query-unit pairs).
    pub fn embed_ids_with(&self, kernel: &Kernel<B>, ids: &[TokenIds], batch_size: usize, progress: &mut dyn FnMut(usize)) -> Vec<Vec<f32>> {
        kernel.embed_ids(&ids.iter().map(Vec::as_slice).collect::<Vec<_>>(), batch_size, &self.device, progress)
    }

    /// Pads one batch of token ids: ids `[batch, tokens]` and the mask of real tokens.
    pub fn pad(&self, batch: &[&[u32]]) -> (Tensor<B, 2, Int>, Tensor<B, 2, Bool>) {
        pad_ids(batch, &self.device)
    }
}

/// Which kernel computes embeddings in this build, part of the encoder's fingerprint: the kernels agree
/// to a cosine of 0.99999, not bit for bit, so vectors cached by one are not reused by the other (bump the
/// version when the CPU kernel's arithmetic changes).
pub const KERNEL: &str = if cfg!(feature = "cuda") { "burn" } else { "cpu-2" };

/// What runs an encoder's forward pass for embeddings, and how it pools.
#[derive(Debug, Clone)]
pub enum Kernel<B: Backend> {
    /// [`CpuBert`]: the default build (no padding, fused passes; see `bert::cpu`).
    Cpu(CpuBert, Pooling),
    /// Burn's module, on the `cuda` feature's GPU.
    Burn(Bert<B>, Pooling),
}

impl<B: Backend> Kernel<B> {
    /// The kernel of this build for `bert`, whose layer norms use `layer_norm_eps`, pooling by `pooling`.
    pub fn new(bert: &Bert<B>, layer_norm_eps: f64, pooling: Pooling) -> Self {
        match cfg!(feature = "cuda") {
            true => Kernel::Burn(bert.clone(), pooling),
            false => Kernel::Cpu(CpuBert::from_bert(bert, layer_norm_eps), pooling),
        }
    }

    /// The pooled vectors of one batch of token ids, `[batch, hidden]` row-major.
    pub fn embed_batch(&self, batch: &[&[u32]], device: &B::Device) -> Vec<f32> {
        match self {
            Kernel::Cpu(cpu, pooling) => cpu.embed(batch, *pooling),
            Kernel::Burn(bert, pooling) => {
                let (ids, mask) = pad_ids::<B>(batch, device);
                let hidden = bert.forward(ids, mask.clone(), false).hidden; // [batch, tokens, hidden]
                pooling.pool(hidden, mask).into_data().to_vec::<f32>().expect("the backend returns f32")
            }
        }
    }

    /// The pooled vectors of token-id rows, in input order: sorted by length so a batch holds rows of
    /// similar length (the CPU kernel pads nothing; Burn's pads to the batch's longest), `batch_size` at a
    /// time. `progress` is told how many rows are done.
    pub fn embed_ids(&self, ids: &[&[u32]], batch_size: usize, device: &B::Device, progress: &mut dyn FnMut(usize)) -> Vec<Vec<f32>> {
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(ids[i].len()));
        let mut out = vec![Vec::new(); ids.len()];
        for chunk in order.chunks(batch_size.max(1)) {
            let batch: Vec<&[u32]> = chunk.iter().map(|&i| ids[i]).collect();
            let pooled = self.embed_batch(&batch, device);
            for (row, &i) in pooled.chunks_exact(pooled.len() / chunk.len()).zip(chunk) {
                out[i] = row.to_vec();
            }
            progress(chunk.len());
        }
        out
    }
}

/// Pads token ids to the longest row: ids `[batch, tokens]` (0 past the end) and the mask of real tokens.
pub fn pad_ids<B: Backend>(batch: &[&[u32]], device: &B::Device) -> (Tensor<B, 2, Int>, Tensor<B, 2, Bool>) {
    let len = batch.iter().map(|b| b.len()).max().unwrap_or(0);
    let mut ids = vec![0i64; batch.len() * len];
    let mut mask = vec![false; batch.len() * len];
    for (r, row) in batch.iter().enumerate() {
        for (c, &id) in row.iter().enumerate() {
            ids[r * len + c] = id as i64;
            mask[r * len + c] = true;
        }
    }
    let shape = [batch.len(), len];
    (Tensor::from_data(TensorData::new(ids, shape), device), Tensor::from_data(TensorData::new(mask, shape), device))
}

/// Vectors of token-id rows through `bert`, pooled by `pooling` and L2-normalised, with gradients (the
/// fine-tuning path; inference goes through [`SentenceEncoder`]).
///
/// # Shapes
/// - returns `[rows, hidden]`
pub fn pool_ids<B: Backend>(bert: &Bert<B>, rows: &[&[u32]], device: &B::Device, pooling: Pooling) -> Tensor<B, 2> {
    pool_ids_in(bert, rows, device, pooling, Precision::F32)
}

/// [`pool_ids`] with the encoder's products in `precision` ([`Precision`]; the vectors are float32).
pub fn pool_ids_in<B: Backend>(bert: &Bert<B>, rows: &[&[u32]], device: &B::Device, pooling: Pooling, precision: Precision) -> Tensor<B, 2> {
    let (ids, mask) = pad_ids::<B>(rows, device);
    pooling.pool(bert.forward_from_in(bert.embed(ids), mask.clone(), 0, false, precision).hidden, mask)
}

/// How many tokens a model folder's tokenizer.json can produce: its vocabulary with its added tokens.
pub fn vocabulary_size(dir: &Path) -> Result<usize, ModelError> {
    let path = dir.join("tokenizer.json");
    let tokenizer = Tokenizer::from_file(&path).map_err(|e| ModelError::weights(&path, e.to_string()))?;
    Ok(tokenizer.get_vocab_size(true))
}

/// `max_seq_length` from sentence_bert_config.json, when the directory has one.
fn sentence_bert_max_len(dir: &Path) -> Result<Option<usize>, ModelError> {
    let path = dir.join("sentence_bert_config.json");
    if !path.exists() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&path).map_err(|e| ModelError::io(&path, e))?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| ModelError::weights(&path, e.to_string()))?;
    Ok(value["max_seq_length"].as_u64().map(|n| n as usize))
}
