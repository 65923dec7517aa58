//! A small real training document for the trainers' tests: five sentences of a lease, two questions,
//! the pretrained encoder's token ids and vectors, and the encoder itself ready to fine-tune.

use std::path::Path;

use arbor_datasets::{Corpus, DocSpan, Document, Span};
use arbor_models::bert::{BertConfig, load_bert};
use arbor_models::pooling::Pooling;
use arbor_models::{DefaultBackend, EncoderConfig, ModelSource, SentenceEncoder};
use burn::backend::Autodiff;
use burn::tensor::backend::Backend;

use crate::data::{TrainDoc, TrainQuery};
use crate::encoder::FineTune;

pub struct Lease {
    pub corpus: Corpus,
    /// One document: units 0-4, the sentences; queries for units 0 and 1; merge pairs (0, 1) and (3, 4).
    pub docs: Vec<TrainDoc>,
    pub tune: FineTune<Autodiff<DefaultBackend>>,
    /// Each unit's token ids.
    pub ids: Vec<Vec<u32>>,
    pub dim: usize,
}

/// The pretrained encoder (all-MiniLM-L6-v2) ready to fine-tune on backend `B`.
pub fn tune<B: Backend>() -> FineTune<B> {
    let encoder = SentenceEncoder::<DefaultBackend>::load(&EncoderConfig::default(), &Default::default()).unwrap();
    let dir = arbor_models::hub::resolve(&ModelSource::AllMiniLmL6V2).unwrap();
    let bert = load_bert(&encoder.config, &dir.path.join("model.safetensors"), &Default::default()).unwrap();
    FineTune { bert, layer_norm_eps: encoder.config.layer_norm_eps, pooling: encoder.pipeline.pooling }
}

/// A small random BERT (hidden 32, two blocks, four heads, a vocabulary of 300: the pooling fixture of
/// arbor-models, made by scripts/make_pooling_fixture.py) ready to fine-tune, mean-pooled: for steps at
/// the field's batch sizes that a test can afford.
pub fn tiny<B: Backend>() -> FineTune<B> {
    tiny_of("tiny-bert-cls")
}

/// A small random encoder of arbor-models' fixtures (`tiny-bert-cls`, or `tiny-roberta`, `tiny-xlm-roberta`,
/// `tiny-mpnet`: scripts/make_family_fixtures.py, the same shape, vocabularies of 400, 151 and 298) ready
/// to fine-tune, mean-pooled.
pub fn tiny_of<B: Backend>(fixture: &str) -> FineTune<B> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/tests/fixtures").join(fixture);
    let config: BertConfig = serde_json::from_str(&std::fs::read_to_string(dir.join("config.json")).unwrap()).unwrap();
    let bert = load_bert(&config, &dir.join("model.safetensors"), &Default::default()).unwrap();
    FineTune { bert, layer_norm_eps: config.layer_norm_eps, pooling: Pooling::Mean }
}

pub fn lease() -> Lease {
    let device = Default::default();
    let encoder = SentenceEncoder::<DefaultBackend>::load(&EncoderConfig::default(), &device).unwrap();
    let tune = tune();
    let texts = [
        "The tenant pays the rent on the first day of each month.",
        "The landlord repairs the roof and the heating.",
        "Any notice must be given in writing.",
        "The deposit is returned within thirty days.",
        "No pets are allowed in the flat.",
    ];
    let text = texts.join(" ");
    let mut at = 0;
    let units: Vec<DocSpan> = texts
        .iter()
        .map(|t| {
            let span = Span::new(at, at + t.len());
            at += t.len() + 1;
            DocSpan { doc: 0, span }
        })
        .collect();
    let corpus =
        Corpus::new(vec![Document { id: "d".into(), title: String::new(), text, sections: vec![], split: None }], vec![], Path::new("t")).unwrap();
    let questions = ["When is the rent due?", "Who fixes the heating?"];
    let (qids, qpooled) = (encoder.tokenize_queries(&questions), encoder.embed_queries(&questions, 8, &mut |_| {}));
    let queries = (0..2)
        .map(|k| TrainQuery { text: questions[k].into(), pooled: qpooled[k].clone(), ids: qids[k].clone(), positive: k, gold: vec![units[k]] })
        .collect();
    let ids = encoder.tokenize(&texts);
    let pooled = encoder.embed(&texts, 8, &mut |_| {});
    let doc = TrainDoc { units, pooled, ids: ids.clone(), pairs: vec![(0, 1), (3, 4)], tokens: vec![], queries };
    Lease { corpus, docs: vec![doc], tune, ids, dim: encoder.dim() }
}
