//! `arbor data check DIR --format F`: what a folder holds as a format reads it, without running anything
//! else: the loader's own report (what it chose, kept and dropped, and why), then per collection (a
//! document id's part before its first '/', else the whole corpus) its documents, words, questions by
//! split, gold spans and questions without one.

use std::collections::BTreeMap;
use std::path::PathBuf;

use arbor_datasets::Corpus;
use arbor_datasets::loaders::{Format, load_reporting};

use crate::validation::collection;

/// `arbor data`'s subcommands.
#[derive(clap::Subcommand)]
pub enum DataCommand {
    /// Print what a folder holds as a format reads it: per collection, documents, questions, gold spans, what was dropped and why
    Check(CheckArgs),
}

#[derive(clap::Args)]
pub struct CheckArgs {
    /// The folder (or file) to read
    pub path: PathBuf,
    /// The format as an experiment's `data.format` writes it (RON): `Jsonl`, `LegalBenchRag(selection: All)`, ...
    #[arg(long, default_value = "Jsonl")]
    pub format: String,
}

pub fn data(command: &DataCommand) -> anyhow::Result<()> {
    match command {
        DataCommand::Check(args) => {
            print!("{}", check(args)?);
            Ok(())
        }
    }
}

/// The lines `arbor data check` prints.
pub fn check(args: &CheckArgs) -> anyhow::Result<String> {
    let format: Format = ron::from_str(&args.format).map_err(|e| anyhow::anyhow!("--format {:?}: {e}", args.format))?;
    let (corpus, report) = load_reporting(&format, &args.path)?;
    let mut out = format!("{} read as {}\n", args.path.display(), args.format);
    for line in report {
        out.push_str(&format!("  {line}\n"));
    }
    for (collection, figures) in collections(&corpus) {
        let splits: Vec<String> = figures.by_split.iter().map(|(s, n)| format!("{n} {s}")).collect();
        out.push_str(&format!(
            "{collection}: {} documents ({} words), {} questions ({}), {} gold spans, {} questions without one\n",
            figures.documents,
            figures.words,
            figures.questions,
            if splits.is_empty() { "no split".to_owned() } else { splits.join(", ") },
            figures.spans,
            figures.without_gold
        ));
    }
    Ok(out)
}

#[derive(Default)]
struct Figures {
    documents: usize,
    words: usize,
    questions: usize,
    by_split: BTreeMap<String, usize>,
    spans: usize,
    without_gold: usize,
}

/// Each collection's figures, a question counted in the collection of its first document.
fn collections(corpus: &Corpus) -> BTreeMap<String, Figures> {
    let of = |id: &str| Some(collection(id)).filter(|c| !c.is_empty()).unwrap_or("all").to_owned();
    let mut out: BTreeMap<String, Figures> = BTreeMap::new();
    for d in &corpus.documents {
        let f = out.entry(of(&d.id)).or_default();
        f.documents += 1;
        f.words += d.text.split_whitespace().count();
    }
    for q in &corpus.queries {
        let f = out.entry(q.doc_ids.first().map_or_else(|| "all".to_owned(), |d| of(d))).or_default();
        f.questions += 1;
        *f.by_split.entry(q.split.clone().unwrap_or_else(|| "no split".into())).or_default() += 1;
        f.spans += q.evidence.len();
        f.without_gold += usize::from(q.evidence.is_empty());
    }
    out
}
