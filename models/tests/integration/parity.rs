//! Parity with sentence-transformers: every sentence of the committed fixture (made by
//! scripts/make_parity_fixture.py) must embed to cosine >= 0.999 with the reference vector.
//! The default encoder is fetched into `$ARBOR_HOME` on first use.

use arbor_models::encoder::Kernel;
use arbor_models::pooling::Pooling;
use arbor_models::{DefaultBackend, EncoderConfig, SentenceEncoder, default_device};

fn fixture() -> Vec<(String, Vec<f32>)> {
    include_str!("../fixtures/parity.jsonl")
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let e = v["embedding"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
            (v["text"].as_str().unwrap().to_owned(), e)
        })
        .collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let n = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (n(a) * n(b))
}

fn encoder() -> SentenceEncoder<DefaultBackend> {
    SentenceEncoder::load(&EncoderConfig::default(), &default_device()).expect("the default encoder loads")
}

#[test]
fn every_fixture_sentence_matches_sentence_transformers() {
    let encoder = encoder();
    let fixture = fixture();
    assert!(fixture.len() >= 30);
    let texts: Vec<&str> = fixture.iter().map(|(t, _)| t.as_str()).collect();
    let ids = encoder.tokenize(&texts);
    assert!(ids.iter().any(|i| i.len() == 256), "the fixture holds a text that is truncated at 256 tokens");
    // Both kernels: the default one (the CPU kernel, or Burn's on a GPU build) and Burn's module.
    let got = encoder.embed(&texts, 8, &mut |_| {});
    let burn = encoder.embed_with(&Kernel::Burn(encoder.bert.clone(), Pooling::Mean), &texts, 8, &mut |_| {});
    for (((text, want), got), burn) in fixture.iter().zip(&got).zip(&burn) {
        for (kernel, v) in [("default", got), ("burn", burn)] {
            let c = cosine(want, v);
            assert!(c >= 0.999, "{kernel} kernel: cosine {c} for {text:?}");
            let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4, "{kernel} kernel: norm {norm}");
        }
        assert!(cosine(got, burn) > 0.99999, "the kernels agree on {text:?}");
    }
}

#[test]
fn padding_and_batch_order_do_not_change_an_embedding() {
    let encoder = encoder();
    let texts = ["short", "a somewhat longer sentence that forces padding on the short one", "mid length text"];
    let batched = encoder.embed(&texts, 3, &mut |_| {});
    for (i, text) in texts.iter().enumerate() {
        let alone = encoder.embed(&[text], 1, &mut |_| {});
        assert!(cosine(&alone[0], &batched[i]) > 0.99999, "{text}");
    }
}

#[test]
fn attention_probabilities_are_returned_per_layer_and_ignore_padding() {
    let encoder = encoder();
    let ids = encoder.tokenize(&["one two three four", "one"]);
    let batch: Vec<&[u32]> = ids.iter().map(|i| i.as_slice()).collect();
    let (input, mask) = encoder.pad(&batch);
    let out = encoder.bert.forward(input, mask, true);
    assert_eq!(out.attentions.len(), encoder.config.num_hidden_layers);
    let [b, h, t, t2] = out.attentions[0].dims();
    assert_eq!((b, h, t, t2), (2, encoder.config.num_attention_heads, ids[0].len(), ids[0].len()));
    let probs = out.attentions[5].clone().into_data().to_vec::<f32>().unwrap();
    let short = ids[1].len();
    for head in 0..h {
        for row in 0..t {
            let start = ((h + head) * t + row) * t;
            let r = &probs[start..start + t];
            assert!((r.iter().sum::<f32>() - 1.0).abs() < 1e-5);
            assert!(r[short..].iter().all(|&p| p < 1e-6), "padding gets no attention");
        }
    }
}

#[test]
fn unit_similarity_is_the_head_weighted_pair_attention() {
    use arbor_models::aggregator::{AggregationInit, HeadAggregator};
    let encoder = encoder();
    let units: Vec<String> = (0..9).map(|i| format!("Sentence {i} talks about topic {} at some length, with a few more words.", i % 3)).collect();
    let units: Vec<&str> = units.iter().map(String::as_str).collect();
    let (l, h, n) = (encoder.config.num_hidden_layers, encoder.config.num_attention_heads, units.len());
    // Windows of 64 tokens hold about three units: several windows, pairs never in one window stay 0.
    let pairs: Vec<(usize, usize)> = (0..n).flat_map(|i| (i + 1..n).map(move |j| (i, j))).collect();
    let s = encoder.pair_attention(&units, 64, 4, &pairs);
    assert_eq!(s.len(), pairs.len() * l * h);
    for init in [AggregationInit::Uniform, AggregationInit::Normal] {
        let aggregator = HeadAggregator::<DefaultBackend>::new(l, h, init, &default_device());
        let weights: Vec<f32> = aggregator.head_weights().into_data().to_vec().unwrap();
        let edges = encoder.unit_similarity(&units, 64, 4, &weights, false).edges;
        for (g, &(i, j)) in pairs.iter().enumerate() {
            let want: f32 = s[g * l * h..(g + 1) * l * h].iter().zip(&weights).map(|(a, w)| a * w).sum();
            let got = edges.iter().find(|e| (e.0 as usize, e.1 as usize) == (i, j)).map_or(0.0, |e| e.2);
            assert!((got - want).abs() < 1e-5, "({i}, {j}): {got} vs {want}");
        }
        assert!(edges.iter().all(|e| e.0 < e.1 && e.2 > 0.0), "each pair once, above 0");
        assert!(edges.iter().any(|e| (e.0, e.1) == (0, 1)) && !edges.iter().any(|e| (e.0, e.1) == (0, 8)), "0 and 8 share no window");
    }
}

#[test]
fn in_context_unit_vectors_come_from_the_same_pass_without_changing_m() {
    use arbor_models::bert::CpuBert;
    let encoder = encoder();
    let units: Vec<String> = (0..6).map(|i| format!("Clause {i} sets out the duty of party {} to give notice.", i % 2)).collect();
    let units: Vec<&str> = units.iter().map(String::as_str).collect();
    let weights = vec![1.0 / 72.0; 72];
    let alone = encoder.unit_similarity(&units, 64, 4, &weights, false);
    let links = encoder.unit_similarity(&units, 64, 4, &weights, true);
    assert_eq!(links.edges, alone.edges, "the full pass gives the same M");
    let vectors = links.vectors.expect("asked for");
    // Windows of 16 tokens hold one unit each: its vector is the mean of its own token states in
    // [CLS] unit [SEP], specials left out, normalised.
    let single = encoder.unit_similarity(&units, 16, 4, &weights, true).vectors.unwrap();
    let cpu = CpuBert::from_bert(&encoder.bert, encoder.config.layer_norm_eps);
    let (cls, sep) = encoder.special_ids();
    for (u, pieces) in encoder.word_pieces(&units).iter().enumerate() {
        let ids: Vec<u32> = std::iter::once(cls).chain(pieces.iter().copied().take(14)).chain([sep]).collect();
        let states = cpu.forward(&[&ids]);
        let h = encoder.config.hidden_size;
        let mut mean = vec![0.0f32; h];
        for token in states[h..(ids.len() - 1) * h].chunks_exact(h) {
            mean.iter_mut().zip(token).for_each(|(m, v)| *m += v);
        }
        assert!(cosine(&mean, &single[u]) > 0.99999, "unit {u}");
        let norm: f32 = vectors[u].iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4);
        // In context is not alone: the neighbours change the states, a little.
        let c = cosine(&vectors[u], &encoder.embed(&[units[u]], 1, &mut |_| {})[0]);
        assert!(c > 0.5 && c < 0.99999, "unit {u}: cosine {c} to the unit encoded alone");
    }
}
