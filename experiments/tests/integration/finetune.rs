//! Fine-tuning the pretrained encoder with SproutRAG (`freeze_encoder: false`) on the committed fixture:
//! a few steps with the encoder inside the model and its own AdamW group, then indexing and queries
//! through the fine-tuned encoder; and the `vectors: Encoder` control, which reads the same trained model.

// The reranking stage's test (see main.rs for why it sits here).
mod merge_pairs;
mod rerank;

use std::path::Path;

use arbor_experiments::experiment::Experiment;
use arbor_experiments::run::run;

const EXPERIMENT: &str = r#"Experiment(
    name: "finetune",
    data: (format: Jsonl, path: "experiments/fixtures/squad-mini", split: Some("test"), max_queries: Some(20)),
    methods: [
        SproutRag((
            attention: Sllm,
            search: Collapsed,
            model: (sllm: (layers: 1, heads: 2, d_model: 64, d_ff: 128), vae: None),
            training: Some((schedule: (epochs: 1, checkpoint_every: 1), batch_size: 256, freeze_encoder: false, lr_encoder: 2e-5)),
        )),
        SproutRag((
            attention: Sllm,
            search: Collapsed,
            vectors: Encoder,
            model: (sllm: (layers: 1, heads: 2, d_model: 64, d_ff: 128), vae: None),
            training: Some((schedule: (epochs: 1, checkpoint_every: 1), batch_size: 256, freeze_encoder: false, lr_encoder: 2e-5)),
        )),
    ],
    controls: [],
)"#;

#[test]
fn the_encoder_is_fine_tuned_in_its_own_optimizer_group() {
    std::env::set_current_dir(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))).unwrap();
    let exp = Experiment::parse(EXPERIMENT, Path::new("finetune.ron")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let (dir, report) = run(&exp, out.path(), false, None).unwrap();
    let m = &report.methods[0].metrics;
    assert!(m.ie_mean > 5.0 && m.hit[2] > 70.0, "IE {} hit@5 {}", m.ie_mean, m.hit[2]);
    // The control reads the same trained model: one training folder, one recorded model.
    let trainings: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && p.file_name().unwrap().to_str().unwrap().starts_with("train-"))
        .collect();
    assert_eq!(trainings.len(), 1, "{trainings:?}");
    let models: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("models.json")).unwrap()).unwrap();
    assert_eq!(models.as_array().unwrap().len(), 1, "{models}");
    assert!(report.methods[1].name.contains("the encoder's vectors"), "{}", report.methods[1].name);
    // Both rows read the fine-tuned encoder's unit vectors from one cache folder (of the test article the 20
    // queries ask about), beside the frozen encoder's vectors of the four training articles.
    let mut units: Vec<usize> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir() && p.file_name().unwrap().to_str().unwrap().starts_with("units-"))
        .map(|p| std::fs::read_dir(p).unwrap().count())
        .collect();
    units.sort();
    assert_eq!(units, [1, 4]);
    let train = &trainings[0];
    let state: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(train.join("checkpoints/state.json")).unwrap()).unwrap();
    assert_eq!(state["complete"], true);
    let files: Vec<&str> = state["files"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    assert!(files.iter().any(|f| f.starts_with("optim-encoder-")), "{files:?}");
    let log = std::fs::read_to_string(train.join("log.jsonl")).unwrap();
    let steps = log.lines().filter(|l| l.contains("loss/ret")).count();
    assert_eq!(steps, 3, "one step per training article (3 of 4; one held back)");
    assert_eq!(log.lines().filter(|l| l.contains("lr/encoder")).count(), steps);
    // Its fine-tuned encoder leaves arbor (`arbor export`): a folder arbor embeds with, holding other
    // weights than the pretrained encoder's.
    let exported = out.path().join("exported");
    crate::common::ok(&["export", dir.to_str().unwrap(), "--row", &report.methods[0].name, "--to", exported.to_str().unwrap()]);
    let sentence = out.path().join("sentence.txt");
    std::fs::write(&sentence, "Which NFL team represented the AFC at Super Bowl 50?\n").unwrap();
    let vector = |model: Option<&Path>| -> Vec<f64> {
        let mut args = vec!["embed", "--input", sentence.to_str().unwrap()];
        if let Some(m) = model {
            args.extend(["--model", m.to_str().unwrap()]);
        }
        let line: serde_json::Value = serde_json::from_str(crate::common::ok(&args).trim()).unwrap();
        line["embedding"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect()
    };
    let (tuned, pretrained) = (vector(Some(&exported)), vector(None));
    let cosine: f64 = tuned.iter().zip(&pretrained).map(|(a, b)| a * b).sum();
    assert!(cosine < 1.0 - 1e-7 && cosine > 0.9, "cosine of the exported encoder's vector to the pretrained one's: {cosine}");
    // A frozen-encoder experiment asking for token-attention head weights cannot fine-tune.
    let bad = EXPERIMENT.replace("attention: Sllm", "attention: TokenBlocks(window_tokens: 256)");
    let err = Experiment::parse(&bad, Path::new("bad.ron")).unwrap_err().to_string();
    assert!(err.contains("needs attention: Sllm"), "{err}");
}

/// With the encoder frozen, `vectors: Encoder` leaves ranked flat are flat retrieval: the same vectors for
/// units and queries, so the same figures to the last digit.
#[test]
fn encoder_vectors_over_a_frozen_encoder_rank_leaves_as_flat() {
    std::env::set_current_dir(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))).unwrap();
    let text = r#"Experiment(
        name: "control",
        data: (format: Jsonl, path: "experiments/fixtures/squad-mini", split: Some("test"), max_queries: Some(40)),
        methods: [
            Flat,
            SproutRag((
                attention: Sllm,
                search: LeavesOnly,
                vectors: Encoder,
                model: (sllm: (layers: 1, heads: 2, d_model: 64, d_ff: 128), vae: None),
                training: Some((schedule: (epochs: 1, checkpoint_every: 1))),
            )),
        ],
        controls: [],
    )"#;
    let exp = Experiment::parse(text, Path::new("control.ron")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let (_, report) = run(&exp, out.path(), false, None).unwrap();
    let (flat, control) = (&report.methods[0].metrics, &report.methods[1].metrics);
    assert!(flat.ie_mean > 5.0, "flat IE {}", flat.ie_mean);
    assert_eq!(flat, control);
    assert_eq!(report.methods[0].tokens_per_query, report.methods[1].tokens_per_query);
    // The control needs the SLLM's attention (training), never a token-attention source.
    let bad = text
        .replace("attention: Sllm", "attention: TokenBlocks(window_tokens: 256)")
        .replace("training: Some((schedule: (epochs: 1, checkpoint_every: 1))),", "");
    let err = Experiment::parse(&bad, Path::new("bad.ron")).unwrap_err().to_string();
    assert!(err.contains("vectors: Encoder needs attention: Sllm"), "{err}");
}

/// `arbor bench-step` on the fixture's articles cut to their first paragraph or so (a whole article's step
/// would take the test ten seconds): the batches file holds the three cases (the median article's window
/// and whole, the longest article's window) with the step's settings, each timed line matches its case,
/// and at the pretrained weights the windowed step's loss is the whole article's (the units outside the
/// window enter by their frozen vectors, which the encoder's gradient path gives again to float rounding).
#[test]
fn bench_step_writes_the_batches_it_timed() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = short_articles(tmp.path(), 1200);
    let ron = tmp.path().join("bench.ron");
    let experiment = format!(
        r#"Experiment(name: "bench", data: (format: Jsonl, path: {:?}, split: Some("test")), units: (max_sentences: 1),
             methods: [Dense((training: (batch_size: 4, freeze_encoder: false, step_tokens: Some(120)))),
                       Rerank((over: Flat, training: (batch_size: 3, negatives: 2, hard_negatives: 2, trainable_layers: 2))),
                       SproutRag((attention: Sllm, model: (sllm: (layers: 1, heads: 2, d_model: 32, d_ff: 64)),
                           training: Some((batch_size: 4, freeze_encoder: false, step_tokens: Some(120), docs_per_step: 2, doc_loss: 1.0))))])"#,
        corpus.display().to_string()
    );
    std::fs::write(&ron, experiment).unwrap();
    let batches = tmp.path().join("batches.json");
    let said = crate::common::ok(&["bench-step", ron.to_str().unwrap(), "--batches", batches.to_str().unwrap(), "--steps", "1"]);
    let lines: Vec<serde_json::Value> = said.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let file: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&batches).unwrap()).unwrap();
    let cases = file["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 3);
    assert_eq!(lines.len(), 6, "three dense cases, the reranker's and SproutRAG's joint steps over one and two documents");
    assert_eq!((file["tau"].as_f64(), file["lr"].as_f64()), (Some(0.05), Some(2e-5)));
    assert_eq!(file["optimizer"]["grad_clipping"]["Norm"].as_f64(), Some(1.0), "{}", file["optimizer"]);
    let len = |v: &serde_json::Value| v.as_array().unwrap().len();
    for (line, case) in lines.iter().zip(cases) {
        let batch = &case["batch"];
        assert_eq!(line["case"], case["name"]);
        assert_eq!(line["units"].as_u64().unwrap() as usize, len(&batch["window"]));
        let queries = len(&batch["queries"]);
        assert!((1..=4).contains(&queries) && line["queries"].as_u64().unwrap() as usize == queries);
        let pieces: usize = ["queries", "window"].iter().flat_map(|side| batch[side].as_array().unwrap()).map(len).sum();
        assert_eq!(line["tokens"].as_u64().unwrap() as usize, pieces);
        assert!(line["median_ms"].as_f64().unwrap() > 0.0 && line["gflop"].as_f64().unwrap() > 0.0);
        assert_eq!(len(&batch["positives"]), queries);
        assert_eq!(len(&batch["window"]) + len(&batch["frozen"]), len(&batch["negatives"]) + queries - repeats(&batch["positives"]));
    }
    let (window, whole) = (&cases[0]["batch"], &cases[1]["batch"]);
    assert_eq!(cases[0]["document"], cases[1]["document"]);
    assert!(len(&window["frozen"]) > 0 && len(&whole["frozen"]) == 0, "the window leaves units out, the whole article none");
    let loss = |i: usize| lines[i]["first_loss"].as_f64().unwrap();
    assert!((loss(0) - loss(1)).abs() < 1e-4, "window {} against whole {}", loss(0), loss(1));
    // `arbor trace-forward` over the first case: per side its mask, embeddings, nine steps of each of the
    // six blocks and the pooled vectors (safetensors: a little-endian header length, then the JSON header).
    let trace = tmp.path().join("trace.safetensors");
    crate::common::ok(&["trace-forward", batches.to_str().unwrap(), "--out", trace.to_str().unwrap()]);
    let bytes = std::fs::read(&trace).unwrap();
    let head = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + head]).unwrap();
    let names = header.as_object().unwrap().keys().filter(|k| *k != "__metadata__").count();
    assert_eq!(names, 2 * (2 + 6 * 9 + 1));
    let longest = |side: &str| window[side].as_array().unwrap().iter().map(len).max().unwrap() as u64;
    for side in ["queries", "window"] {
        let shape = |step: &str| header[format!("{side}.{step}")]["shape"].clone();
        assert_eq!(shape("mask"), serde_json::json!([len(&window[side]), longest(side)]), "{side}");
        assert_eq!(shape("5.intermediate"), serde_json::json!([len(&window[side]) as u64 * longest(side), 1536]), "{side}");
        assert_eq!(shape("pooled"), serde_json::json!([len(&window[side]), 384]), "{side}");
    }
    // The reranker's step: 3 questions, each its positive and 2 negatives as [CLS] query [SEP] unit [SEP].
    let rerank = &file["rerank"];
    let (pairs, line) = (rerank["batch"]["pairs"].as_array().unwrap(), &lines[3]);
    assert_eq!((line["case"].as_str(), rerank["batch"]["group"].as_u64(), pairs.len()), (Some("reranker, pairs"), Some(3), 9));
    assert_eq!((line["queries"].as_u64(), line["units"].as_u64()), (Some(3), Some(9)));
    let ids = |p: &serde_json::Value| p.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect::<Vec<_>>();
    let (cls, sep) = (ids(&pairs[0])[0], *ids(&pairs[0]).last().unwrap());
    for p in pairs.iter().map(ids) {
        assert!(p[0] == cls && *p.last().unwrap() == sep && p.iter().filter(|&&x| x == sep).count() == 2 && p.len() <= 256);
    }
    assert_eq!(line["tokens"].as_u64().unwrap() as usize, pairs.iter().map(len).sum::<usize>());
    assert!(rerank["batch"]["priors"].as_array().unwrap().iter().all(|p| p.as_f64().unwrap().abs() <= 1.0 + 1e-6));
    assert_eq!((len(&rerank["head"]["weight"]), rerank["head"]["gamma"].as_f64(), rerank["trainable_layers"].as_u64()), (384, Some(20.0), Some(2)));
    // A listwise softmax loss over each group: positive and finite.
    let first = line["first_loss"].as_f64().unwrap();
    assert!(first > 0.0 && first < 10.0, "{first}");
    // SproutRAG's joint step on the median article: the dense window's batch, each unit's row in it, the
    // SLLM's start (1 block, 2 heads, width 32 over the encoder's 384) and the paragraphs' merge pairs.
    let joints = file["joints"].as_array().unwrap();
    let (joint, line) = (&joints[0], &lines[4]);
    assert_eq!(line["case"], joint["name"]);
    assert_eq!(joint["name"], "SproutRAG joint step, median document, window");
    assert_eq!(len(&joint["step"]["documents"]), 1);
    let batch = &joint["step"]["documents"][0];
    assert_eq!(batch["batch"]["queries"], window["queries"], "the dense step's queries");
    assert_eq!(line["units"].as_u64().unwrap() as usize, len(&batch["rows"]));
    assert_eq!(len(&batch["rows"]), len(&batch["batch"]["window"]) + len(&batch["batch"]["frozen"]));
    assert!(len(&batch["pairs"]) > 0 && len(&batch["positives"]) == len(&batch["batch"]["queries"]));
    let start = &joint["start"];
    assert_eq!((len(&start["input"]["weight"]), len(&start["input"]["weight"][0]), len(&start["blocks"])), (384, 32, 1));
    assert_eq!((len(&start["alpha"]), len(&start["alpha"][0]), start["heads"].as_u64()), (1, 2, Some(2)));
    assert_eq!((joint["lambda"].as_f64(), joint["lr_new"].as_f64(), joint["hard_negatives"].as_bool()), (Some(0.1), Some(1e-4), Some(true)));
    let first = line["first_loss"].as_f64().unwrap();
    assert!(first > 0.0 && first.is_finite(), "{first}");
    // The row's `docs_per_step: 2`: a second joint case over the median article and the next longer one,
    // each with its own window and queries, its document term's weight written, the same start.
    let (two, line) = (&joints[1], &lines[5]);
    assert_eq!((line["case"].as_str(), two["name"].as_str()), (Some("SproutRAG joint step, 2 documents, windows"), two["name"].as_str()));
    let documents = two["step"]["documents"].as_array().unwrap();
    assert_eq!(documents.len(), 2);
    assert_eq!(documents[0], joint["step"]["documents"][0], "the median article first, as the one-document case reads it");
    assert_ne!(documents[1]["batch"]["queries"], documents[0]["batch"]["queries"]);
    let rows: usize = documents.iter().map(|d| len(&d["rows"])).sum();
    assert_eq!(line["units"].as_u64().unwrap() as usize, rows);
    let candidates = rows; // hard negatives: every unit of the step is a candidate once
    for pair in two["step"]["excluded"].as_array().unwrap() {
        let (i, j) = (pair[0].as_u64().unwrap() as usize, pair[1].as_u64().unwrap() as usize);
        assert!(i < 8 && j < candidates && i != j, "{pair}");
    }
    assert_eq!((two["doc_loss"].as_f64(), two["start"].to_string()), (Some(1.0), joint["start"].to_string()));
    let first = line["first_loss"].as_f64().unwrap();
    assert!(first > 0.0 && first.is_finite(), "{first}");
}

/// The large-batch case (issue 65): a Dense method drawing batches across documents gives one step of its
/// `batch_size` questions, each with a passage of at most the encoder's 256 word pieces, by GradCache in
/// its chunks; the file holds that batch (its targets each question's own passage, exclusions naming real
/// rows) and no one-document case; `--precision bf16` is refused by the CPU build, naming it.
#[test]
fn bench_step_times_the_large_batch_across_documents() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = short_articles(tmp.path(), 1200);
    let ron = tmp.path().join("bench.ron");
    let experiment = format!(
        r#"Experiment(name: "bench", data: (format: Jsonl, path: {:?}, split: Some("test")), units: (max_sentences: 1),
             methods: [Dense((training: (batch_size: 6, freeze_encoder: false, negatives: Corpus((mine: Bm25, per_query: 1)), grad_cache: Some(4))))])"#,
        corpus.display().to_string()
    );
    std::fs::write(&ron, experiment).unwrap();
    let batches = tmp.path().join("batches.json");
    let args = ["bench-step", ron.to_str().unwrap(), "--batches", batches.to_str().unwrap(), "--steps", "1"];
    let said = crate::common::ok(&args);
    let line: serde_json::Value = serde_json::from_str(said.trim()).unwrap();
    let file: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&batches).unwrap()).unwrap();
    assert_eq!((file["cases"].as_array().unwrap().len(), file["precision"].as_str()), (0, Some("F32")));
    let (pairs, batch) = (&file["pairs"], &file["pairs"]["batch"]);
    assert_eq!(line["case"], pairs["name"]);
    let len = |v: &serde_json::Value| v.as_array().unwrap().len();
    let (queries, passages) = (len(&batch["queries"]), len(&batch["passages"]));
    assert!((2..=6).contains(&queries) && passages >= queries, "{queries} questions, {passages} passages");
    assert!(pairs["name"].as_str().unwrap().starts_with(&format!("{queries} questions x 256-piece passages, GradCache chunks of 4")));
    assert_eq!((pairs["max_pieces"].as_u64(), batch["chunk"].as_u64()), (Some(256), Some(4)));
    assert!(batch["passages"].as_array().unwrap().iter().all(|p| len(p) <= 256));
    let targets: Vec<u64> = batch["targets"].as_array().unwrap().iter().map(|t| t.as_u64().unwrap()).collect();
    assert_eq!(targets, (0..queries as u64).collect::<Vec<_>>(), "each question's own passage, in order");
    for pair in batch["excluded"].as_array().unwrap() {
        let (q, p) = (pair[0].as_u64().unwrap(), pair[1].as_u64().unwrap());
        assert!((q as usize) < queries && (p as usize) < passages && targets[q as usize] != p);
    }
    let pieces: usize = ["queries", "passages"].iter().flat_map(|side| batch[side].as_array().unwrap()).map(len).sum();
    assert_eq!(line["tokens"].as_u64().unwrap() as usize, pieces);
    let first = line["first_loss"].as_f64().unwrap();
    assert!(first > 0.0 && first < (passages as f64).ln() + 1.0, "{first}");
    let out = crate::common::arbor(&[&args[..], &["--precision", "bf16"]].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("bf16") && err.contains("ndarray"), "{err}");
}

/// `arbor export`: the fine-tuned Dense row's encoder as a sentence-transformers folder, read back by arbor
/// through `model: Dir(...)`: Flat over the export ranks every query exactly as the row did (and not as
/// Flat over the pretrained encoder, so the weights written are the fine-tuned ones). A row whose
/// encoder stayed frozen, an unknown row and an existing folder are refused, leaving nothing behind.
#[test]
fn an_exported_encoder_ranks_as_its_row() {
    std::env::set_current_dir(crate::common::workspace()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let corpus = short_articles(tmp.path(), 1200);
    let data = format!(r#"data: (format: Jsonl, path: {:?}, split: Some("test")), units: (max_sentences: 1)"#, corpus.display().to_string());
    let tune = format!(
        r#"Experiment(name: "tune", {data}, methods: [Flat,
            Dense((training: (batch_size: 4, freeze_encoder: false, lr_encoder: 1e-4, schedule: (epochs: 2, checkpoint_every: 100)))),
            Dense((training: (batch_size: 4)))], controls: [])"#
    );
    let (trained, report) = run(&Experiment::parse(&tune, Path::new("tune.ron")).unwrap(), &tmp.path().join("runs"), false, None).unwrap();
    let (flat, tuned, map) = (&report.methods[0].name, &report.methods[1].name, &report.methods[2].name);
    assert!(tuned.contains("fine-tuned") && map.contains("linear map"), "{tuned} / {map}");
    let to = tmp.path().join("exported");
    let (run_arg, to_arg) = (trained.to_str().unwrap(), to.to_str().unwrap());
    crate::common::ok(&["export", run_arg, "--row", tuned, "--to", to_arg]);
    for file in [
        "modules.json",
        "1_Pooling/config.json",
        "model.safetensors",
        "tokenizer.json",
        "config.json",
        "sentence_bert_config.json",
        "arbor-export.json",
    ] {
        assert!(to.join(file).is_file(), "{file} missing");
    }
    let refused = |row: &str, to: &Path, says: &str| {
        let out = crate::common::arbor(&["export", run_arg, "--row", row, "--to", to.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(says), "{row}: {err}");
    };
    refused(map, &tmp.path().join("map"), "linear map over the frozen encoder");
    refused("no such row", &tmp.path().join("none"), "its trained rows");
    refused(tuned, &to, "exists");
    assert!(!tmp.path().join("map").exists() && !tmp.path().join("none").exists());
    let leftovers =
        std::fs::read_dir(tmp.path()).unwrap().filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().contains(".partial-")).count();
    assert_eq!(leftovers, 0);
    // The export as arbor's encoder: Flat over it is the fine-tuned row.
    let back = format!(r#"Experiment(name: "back", {data}, encoder: (model: Dir({to:?})), methods: [Flat], controls: [])"#);
    let (again, _) = run(&Experiment::parse(&back, Path::new("back.ron")).unwrap(), &tmp.path().join("runs"), false, None).unwrap();
    let (first, second) = (rankings(&trained), rankings(&again));
    let over_export = &second[report.methods[0].name.as_str()];
    assert!(!over_export.is_empty());
    for (query, want) in &first[tuned.as_str()] {
        crate::common::same_ranking(&over_export[query], want).unwrap_or_else(|e| panic!("query {query}: {e}"));
    }
    let moved = first[flat.as_str()].iter().filter(|(q, want)| crate::common::same_ranking(&over_export[*q], want).is_err()).count();
    assert!(moved > 0, "Flat over the export ranks as Flat over the pretrained encoder: the export holds no fine-tuning");
}

pub(crate) type Rankings = std::collections::HashMap<String, std::collections::HashMap<String, Vec<crate::common::Ranked>>>;

/// A run's retrievals: method -> query -> ranked items.
pub(crate) fn rankings(run: &Path) -> Rankings {
    let mut out = Rankings::new();
    for line in std::fs::read_to_string(run.join("retrievals.jsonl")).unwrap().lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        let items = r["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                let spans =
                    i["spans"].as_array().unwrap().iter().map(|s| [s[0].as_u64().unwrap() as usize, s[1].as_u64().unwrap() as usize]).collect();
                (i["doc"].as_str().unwrap().to_owned(), spans, i["score"].as_f64().unwrap() as f32)
            })
            .collect();
        out.entry(r["method"].as_str().unwrap().to_owned()).or_default().insert(r["query"].as_str().unwrap().to_owned(), items);
    }
    out
}

/// How many of `positives` repeat an earlier one (two queries of one unit).
fn repeats(positives: &serde_json::Value) -> usize {
    let p: Vec<u64> = positives.as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    (0..p.len()).filter(|&i| p[..i].contains(&p[i])).count()
}

/// The fixture's articles cut after the last sentence ending before byte `cut`, with the questions whose
/// evidence lies in what is kept, as a JSONL corpus in `dir`; returns its folder.
pub(crate) fn short_articles(dir: &Path, cut: usize) -> std::path::PathBuf {
    use serde_json::Value;
    let fixture = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/squad-mini"));
    let mut kept = std::collections::HashMap::new();
    let docs: Vec<String> = std::fs::read_to_string(fixture.join("documents.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut d: Value = serde_json::from_str(l).unwrap();
            let text = d["text"].as_str().unwrap();
            let end = text.char_indices().take_while(|&(i, _)| i < cut).filter(|&(_, c)| c == '.').last().map_or(text.len(), |(i, _)| i + 1);
            kept.insert(d["id"].as_str().unwrap().to_owned(), end);
            d["text"] = Value::from(&text[..end]);
            d.to_string()
        })
        .collect();
    let queries: Vec<String> = std::fs::read_to_string(fixture.join("queries.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| {
            let q: Value = serde_json::from_str(l).unwrap();
            q["evidence"].as_array().unwrap().iter().all(|e| e["end"].as_u64().unwrap() as usize <= kept[e["doc_id"].as_str().unwrap()])
        })
        .map(str::to_owned)
        .collect();
    let out = dir.join("short");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("documents.jsonl"), docs.join("\n")).unwrap();
    std::fs::write(out.join("queries.jsonl"), queries.join("\n")).unwrap();
    out
}

/// SAC fine-tuned (`SummaryChunks((training: Some(..)))`) reads every unit after its document's summary in
/// training and at evaluation: trained at a learning rate of 0 its encoder is the pretrained one, so it
/// ranks every query as untrained SAC does (the evaluation reads the same headed text through the tuned
/// encoder's kernel), while its training read other inputs than its matched control's (the dense fine-tune
/// without headers, added as its control): another training folder, other validation figures. An index
/// built `--from` the run embeds as either row and ranks as it did.
#[test]
fn sac_fine_tuned_reads_its_headers_in_training_and_evaluation() {
    std::env::set_current_dir(crate::common::workspace()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let corpus = short_articles(tmp.path(), 1200);
    let text = format!(
        r#"Experiment(name: "sac", data: (format: Jsonl, path: {:?}, split: Some("test")), units: (max_sentences: 1),
            methods: [SummaryChunks((summary_tokens: 16)),
                SummaryChunks((summary_tokens: 16, training: Some((batch_size: 4, freeze_encoder: false, lr_encoder: 0.0,
                    schedule: (epochs: 1, checkpoint_every: 100)))))],
            controls: [Dense])"#,
        corpus.display().to_string()
    );
    let (dir, report) = run(&Experiment::parse(&text, Path::new("sac.ron")).unwrap(), &tmp.path().join("runs"), false, None).unwrap();
    let names: Vec<&str> = report.methods.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(names[1].starts_with("SAC: leaf units with a 16-token document summary, encoder fine-tuned at 0"), "{}", names[1]);
    assert!(names[2].starts_with("Dense, encoder fine-tuned at 0"), "the matched control: {}", names[2]);
    let ranked = rankings(&dir);
    let (plain, tuned, control) = (&ranked[names[0]], &ranked[names[1]], &ranked[names[2]]);
    assert!(!plain.is_empty());
    for (query, want) in plain {
        crate::common::same_ranking(&tuned[query], want).unwrap_or_else(|e| panic!("query {query}: {e}"));
    }
    let moved = plain.iter().filter(|(q, want)| crate::common::same_ranking(&control[*q], want).is_err()).count();
    assert!(moved > 0, "the control ranks as SAC: it read the headers too");
    let logs: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with("train-"))
        .map(|p| std::fs::read_to_string(p.join("log.jsonl")).unwrap())
        .collect();
    assert_eq!(logs.len(), 2, "SAC's training and its control's");
    let held_out = |log: &str| -> String { log.lines().filter(|l| l.contains("eval/")).collect::<Vec<_>>().join("\n") };
    assert!(!held_out(&logs[0]).is_empty(), "{}", logs[0]);
    assert_ne!(held_out(&logs[0]), held_out(&logs[1]), "the same held-out figures: SAC's training read no headers");
    // Its encoder leaves arbor as the Dense row's does; untrained SAC has none to give.
    let to = tmp.path().join("sac-encoder");
    crate::common::ok(&["export", dir.to_str().unwrap(), "--row", names[1], "--to", to.to_str().unwrap()]);
    assert!(to.join("model.safetensors").is_file() && to.join("arbor-export.json").is_file());
    // Its model serves an index of the same articles (issue 63), each one's summary written as the run
    // wrote it before every unit: `arbor query` ranks as the row did; so does its control's (no summary).
    crate::common::an_index_from_the_run_ranks_as_its_row(&dir, &corpus, "SAC", names[1], 5);
    crate::common::an_index_from_the_run_ranks_as_its_row(&dir, &corpus, "Dense", names[2], 5);
    let both = crate::common::arbor(&[
        "index",
        corpus.to_str().unwrap(),
        "--into",
        tmp.path().join("x.arbor").to_str().unwrap(),
        "--from",
        dir.to_str().unwrap(),
        "--row",
        "fine-tuned",
    ]);
    assert!(String::from_utf8_lossy(&both.stderr).contains("2 rows of"), "{}", String::from_utf8_lossy(&both.stderr));
}

/// SproutRAG over SAC's inputs (`summary: Some(..)`) reads every leaf after its document's summary, and so
/// does its matched control: an untrained token-attention tree searched over its leaves alone, and a
/// trained SLLM row that reads the encoder's vectors (fine-tuned at a learning rate of 0, so the pretrained
/// encoder's) both rank every query as untrained SAC does, as does the added control (the dense fine-tune
/// over the summaries, at the same rate); the same SLLM row without the summary ranks otherwise, and its
/// training read other inputs (other held-out figures). An index built `--from` the run ranks as the SLLM
/// row over the summaries did.
#[test]
fn sproutrag_over_summaries_reads_them_as_its_control_does() {
    std::env::set_current_dir(crate::common::workspace()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let corpus = short_articles(tmp.path(), 1200);
    let sllm = |summary: &str| {
        format!(
            "SproutRag((attention: Sllm, search: LeavesOnly, vectors: Encoder, {summary}
                model: (sllm: (layers: 1, heads: 2, d_model: 64, d_ff: 128), vae: None),
                training: Some((batch_size: 4, freeze_encoder: false, lr_encoder: 0.0, schedule: (epochs: 1, checkpoint_every: 100)))))"
        )
    };
    let text = format!(
        r#"Experiment(name: "sprout-sac", data: (format: Jsonl, path: {:?}, split: Some("test")), units: (max_sentences: 1),
            methods: [SummaryChunks((summary_tokens: 16)), SproutRag((search: LeavesOnly, summary: Some((summary_tokens: 16)))), {}, {}],
            controls: [Dense])"#,
        corpus.display().to_string(),
        sllm("summary: Some((summary_tokens: 16)),"),
        sllm("")
    );
    let (dir, report) = run(&Experiment::parse(&text, Path::new("sprout-sac.ron")).unwrap(), &tmp.path().join("runs"), false, None).unwrap();
    let names: Vec<&str> = report.methods.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names.len(), 6, "four rows and two controls: {names:?}");
    let summary = "units read after a 16-token document summary";
    for (row, headed) in [(1, true), (2, true), (3, false), (4, true), (5, false)] {
        assert_eq!(names[row].contains(summary), headed, "{}", names[row]);
    }
    assert!(names[4].starts_with("Dense, encoder fine-tuned at 0") && names[5].starts_with("Dense, encoder fine-tuned at 0"), "{names:?}");
    let ranked = rankings(&dir);
    let sac = &ranked[names[0]];
    assert!(!sac.is_empty());
    for row in [1, 2, 4] {
        for (query, want) in sac {
            crate::common::same_ranking(&ranked[names[row]][query], want).unwrap_or_else(|e| panic!("{}, query {query}: {e}", names[row]));
        }
    }
    for row in [3, 5] {
        let moved = sac.iter().filter(|(q, want)| crate::common::same_ranking(&ranked[names[row]][*q], want).is_err()).count();
        assert!(moved > 0, "{} ranks as SAC without the summaries", names[row]);
    }
    let models: Vec<arbor_experiments::trained::TrainedModel> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("models.json")).unwrap()).unwrap();
    let log = |row: usize| -> String {
        let model = models.iter().find(|m| m.method == names[row]).unwrap_or_else(|| panic!("no model of {}", names[row]));
        let log = std::fs::read_to_string(model.dir.join("log.jsonl")).unwrap();
        log.lines().filter(|l| l.contains("eval/")).collect::<Vec<_>>().join("\n")
    };
    assert!(!log(2).is_empty());
    assert_ne!(log(2), log(3), "the same held-out figures: the SLLM's training read no summaries");
    // The SLLM row over the summaries serves an index of the same articles (issue 63): each unit read after
    // its document's summary, written as the run wrote it, through the fine-tuned encoder; the tree from the
    // SLLM's M; `arbor query` with the row's search ranks as the row did.
    crate::common::an_index_from_the_run_ranks_as_its_row(&dir, &corpus, names[2], names[2], 5);
}

/// Mined negatives come from the training split only: with negatives mined over the whole training corpus
/// (`Corpus`) and from the other documents (`Mined`), every negative `negatives.json` lists lies in a
/// document of the training split, never in a validation document (carved from `train`) or a test one,
/// though both hold text BM25 would rank.
#[test]
fn mined_negatives_never_come_from_validation_or_test_documents() {
    std::env::set_current_dir(crate::common::workspace()).unwrap();
    let text = r#"Experiment(name: "mined", data: (format: Jsonl, path: "experiments/fixtures/squad-mini", split: Some("test"), max_queries: Some(10)),
        methods: [
            Dense((training: (schedule: (epochs: 1, checkpoint_every: 100), negatives: Corpus((mine: Bm25, per_query: 3, top: 30))))),
            Dense((training: (schedule: (epochs: 1, checkpoint_every: 100), negatives: Mined((mine: Bm25, per_query: 3, top: 30))))),
        ],
        controls: [])"#;
    let exp = Experiment::parse(text, Path::new("mined.ron")).unwrap();
    let (corpus, _) = arbor_experiments::run::load_corpus(&exp).unwrap();
    let split = |id: &str| corpus.documents.iter().find(|d| d.id == id).and_then(|d| d.split.clone()).unwrap();
    let splits: std::collections::BTreeSet<String> = corpus.documents.iter().filter_map(|d| d.split.clone()).collect();
    assert!(splits.contains("validation") && splits.contains("test"), "{splits:?}");
    let tmp = tempfile::tempdir().unwrap();
    let (dir, _) = run(&exp, tmp.path(), false, None).unwrap();
    let models: Vec<arbor_experiments::trained::TrainedModel> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("models.json")).unwrap()).unwrap();
    assert_eq!(models.len(), 2);
    for model in &models {
        let mined: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(model.dir.join("negatives.json")).unwrap()).unwrap();
        // Lists by training document, by query, by negative: `[document id, start, end]`.
        let list = |v: &serde_json::Value| v.as_array().unwrap().clone();
        let docs: Vec<String> =
            list(&mined["negatives"]).iter().flat_map(list).flat_map(|q| list(&q)).map(|n| n[0].as_str().unwrap().to_owned()).collect();
        assert!(!docs.is_empty(), "{}: no negative mined", model.method);
        for doc in docs {
            assert_eq!(split(&doc), "train", "{}: a negative from {doc}", model.method);
        }
    }
}
