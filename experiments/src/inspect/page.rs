//! The HTML of `arbor inspect`: a header with the run's setting and code, a legend of the shown rows
//! (each a colour), the queries where the chosen pair differs most, then one collapsible block per query:
//! its question and each row's IE in the summary line (scannable with everything closed), and inside, each
//! row's top items (document, offsets, score, beam path) and the excerpts of the documents involved, gold
//! on a yellow ground and each row's items underlined in its colour, numbered by rank.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write;

use arbor_datasets::span::char_offset;
use arbor_datasets::{Corpus, Query};
use arbor_eval::scoring::report::{Report, Role};
use arbor_eval::scoring::retrievals::{Handed, Retrieval};
use arbor_eval::scoring::runner::CONTEXT_K;

use super::of_row;

/// Row colours (colour-blind-safe, after Okabe and Ito), in legend order.
const COLOURS: [&str; super::MAX_ROWS] = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#56B4E9", "#E69F00", "#000000", "#999999"];
/// Bytes of text shown either side of a gold span or an item.
const CONTEXT_BYTES: usize = 160;
/// How many queries the disagreement table lists.
const DISAGREEMENTS: usize = 25;

pub struct Inputs<'a> {
    pub report: &'a Report,
    pub corpus: &'a Corpus,
    pub retrievals: &'a [Retrieval],
    /// Indices of the shown rows in the report.
    pub rows: &'a [usize],
    /// The two rows whose differences are listed.
    pub pair: Option<(usize, usize)>,
}

/// `text` with HTML's special characters escaped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

pub fn render(inp: &Inputs) -> String {
    let report = inp.report;
    let mut html = String::new();
    let title = format!("arbor inspect: {}", report.experiment);
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>",
        escape(&title)
    );
    let _ = write!(html, "<header><h1>{}</h1><p class=\"setting\">{}</p>", escape(&title), escape(&report.setting));
    if let Some(p) = &report.provenance {
        let dirty = if p.dirty { " (with uncommitted changes)" } else { "" };
        let _ = write!(html, "<p class=\"code\">made by arbor {} at commit {}{dirty}</p>", escape(&p.version), escape(&p.commit));
    }
    html.push_str("</header>");
    legend(&mut html, inp);
    let by_row: Vec<HashMap<&str, &Retrieval>> = inp.rows.iter().map(|&r| of_row(inp.retrievals, &report.methods[r].name)).collect();
    let queries: HashMap<&str, &Query> = inp.corpus.queries.iter().map(|q| (q.id.as_str(), q)).collect();
    if let Some(pair) = inp.pair {
        disagreements(&mut html, inp, pair, &queries);
    }
    html.push_str("<section id=\"queries\"><h2>Queries</h2><p><button onclick=\"all(true)\">open all</button> <button onclick=\"all(false)\">close all</button></p>");
    for (i, id) in report.queries.iter().enumerate() {
        let Some(query) = queries.get(id.as_str()) else { continue };
        let shown: Vec<Option<&Retrieval>> = by_row.iter().map(|m| m.get(id.as_str()).copied()).collect();
        query_block(&mut html, inp, i, query, &shown);
    }
    let _ = writeln!(html, "</section><script>{SCRIPT}</script></body></html>");
    html
}

fn legend(html: &mut String, inp: &Inputs) {
    html.push_str(
        "<section id=\"rows\"><h2>Rows</h2><table class=\"legend\"><tr><th></th><th>row</th><th>role</th><th>IE mean</th><th>trees</th></tr>",
    );
    for (c, &r) in inp.rows.iter().enumerate() {
        let m = &inp.report.methods[r];
        let role = match &m.role {
            Role::Untrained => "untrained".to_owned(),
            Role::Trained => "trained".to_owned(),
            Role::Control { of } => format!("control of {}", of.join("; ")),
            Role::TrainedControl { of } => format!("trained; control of {}", of.join("; ")),
        };
        let _ = write!(
            html,
            "<tr class=\"row\" data-row=\"{c}\"><td><i class=\"sw\" style=\"background:{}\"></i></td><td>{}</td><td>{}</td><td>{:.1}</td><td>{}</td></tr>",
            COLOURS[c],
            escape(&m.name),
            escape(&role),
            m.metrics.ie_mean,
            m.tree_shape.map_or("-".to_owned(), |s| s.short())
        );
    }
    html.push_str("</table><p>Gold spans on yellow; each row's first items underlined in its colour, numbered by rank. Trees: the mean leaf depth (the deepest leaf), the balance (0.5 balanced, near 0 a chain) and the share of nodes that are contiguous spans of the document.</p></section>");
}

/// The queries where rows `a` and `b` differ most in IE, linked to their blocks.
fn disagreements(html: &mut String, inp: &Inputs, (a, b): (usize, usize), queries: &HashMap<&str, &Query>) {
    let (ra, rb) = (&inp.report.methods[a], &inp.report.methods[b]);
    let _ = write!(
        html,
        "<section id=\"disagreements\"><h2>Where {} and {} differ most</h2><table class=\"diff\"><tr><th>query</th><th>IE A</th><th>IE B</th><th>A &minus; B</th></tr>",
        escape(&ra.name),
        escape(&rb.name)
    );
    let n = inp.report.queries.len().min(ra.per_query.len()).min(rb.per_query.len());
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| (ra.per_query[j] - rb.per_query[j]).abs().total_cmp(&(ra.per_query[i] - rb.per_query[i]).abs()).then(i.cmp(&j)));
    for &i in order.iter().take(DISAGREEMENTS) {
        let text = queries.get(inp.report.queries[i].as_str()).map_or("", |q| q.text.as_str());
        let (x, y) = (ra.per_query[i], rb.per_query[i]);
        let _ =
            write!(html, "<tr><td><a href=\"#q-{i}\">{}</a></td><td>{x:.1}</td><td>{y:.1}</td><td class=\"d\">{:+.1}</td></tr>", escape(text), x - y);
    }
    html.push_str("</table></section>");
}

fn query_block(html: &mut String, inp: &Inputs, i: usize, query: &Query, shown: &[Option<&Retrieval>]) {
    let _ = write!(
        html,
        "<details class=\"query\" id=\"q-{i}\" data-query=\"{}\"><summary><span class=\"n\">{}</span> {}",
        escape(&query.id),
        i + 1,
        escape(&query.text)
    );
    for (c, r) in shown.iter().enumerate() {
        let ie = r.map_or("n/a".to_owned(), |r| format!("{:.0}", r.ie));
        let _ = write!(html, " <b class=\"chip\" style=\"border-color:{}\">{ie}</b>", COLOURS[c]);
    }
    html.push_str("</summary><table class=\"items\"><tr><th></th><th>row</th><th>IE</th><th>first items</th></tr>");
    for (c, r) in shown.iter().enumerate() {
        let name = &inp.report.methods[inp.rows[c]].name;
        let _ = write!(html, "<tr data-row=\"{c}\"><td><i class=\"sw\" style=\"background:{}\"></i></td><td>{}</td>", COLOURS[c], escape(name));
        match r {
            None => html.push_str("<td>n/a</td><td>not in retrievals.jsonl</td></tr>"),
            Some(r) => {
                let _ = write!(html, "<td>{:.1}</td><td><ol>", r.ie);
                for item in r.items.iter().take(CONTEXT_K) {
                    item_line(html, inp.corpus, item);
                }
                html.push_str("</ol></td></tr>");
            }
        }
    }
    html.push_str("</table>");
    excerpts(html, inp.corpus, query, shown);
    html.push_str("</details>");
}

/// One ranked item: its document, character offsets, score and, for a tree, the way down to it.
fn item_line(html: &mut String, corpus: &Corpus, item: &Handed) {
    let text = corpus.doc_index(&item.doc).map_or("", |d| corpus.documents[d].text.as_str());
    // A document the corpus no longer holds (or a span past its end) shows 0 rather than failing the page.
    let at = |b: usize| if text.is_char_boundary(b) { char_offset(text, b) } else { 0 };
    let spans: Vec<String> = item.spans.iter().map(|&[s, e]| format!("{}&ndash;{}", at(s), at(e))).collect();
    let _ = write!(html, "<li class=\"item\">{} chars {} score {:.3}", escape(&item.doc), spans.join(", "), item.score);
    if !item.path.is_empty() {
        let steps: Vec<String> = item.path.iter().map(|s| format!("{} ({} leaves, {:.3})", s.node, s.leaves, s.score)).collect();
        let _ = write!(html, "<div class=\"path\">beam path: {}</div>", steps.join(" &rarr; "));
    }
    html.push_str("</li>");
}

/// A marked interval of a document: gold (`row` None) or a span of the item of rank `rank` of shown row
/// `row` (its rank number printed before the item's first span only).
#[derive(Clone, Copy)]
pub struct Mark {
    /// The interval's byte offsets in the document.
    pub start: usize,
    pub end: usize,
    /// The shown row whose item it is; None for gold.
    pub row: Option<usize>,
    pub rank: usize,
    /// Whether it is the item's first span.
    pub first: bool,
}

/// The excerpts of every document holding gold or one of the shown items, gold documents first.
fn excerpts(html: &mut String, corpus: &Corpus, query: &Query, shown: &[Option<&Retrieval>]) {
    let mut docs: Vec<usize> = Vec::new();
    let mut marks: HashMap<usize, Vec<Mark>> = HashMap::new();
    let mut add = |doc: usize, mark: Mark| {
        if !docs.contains(&doc) {
            docs.push(doc);
        }
        marks.entry(doc).or_default().push(mark);
    };
    for g in corpus.gold(query) {
        add(g.doc, Mark { start: g.span.start, end: g.span.end, row: None, rank: 0, first: false });
    }
    for (c, r) in shown.iter().enumerate() {
        for (rank, item) in r.iter().flat_map(|r| r.items.iter().take(CONTEXT_K)).enumerate() {
            let Some(d) = corpus.doc_index(&item.doc) else { continue };
            for (i, &[start, end]) in item.spans.iter().enumerate() {
                add(d, Mark { start, end, row: Some(c), rank: rank + 1, first: i == 0 });
            }
        }
    }
    for d in docs {
        let doc = &corpus.documents[d];
        let _ = write!(html, "<div class=\"doc\" data-doc=\"{}\"><h4>{}</h4><div class=\"text\">", escape(&doc.id), escape(&doc.id));
        excerpt(html, &doc.text, &marks[&d]);
        html.push_str("</div></div>");
    }
}

/// The windows of `text` around `marks`, merged, with "…" between them; each piece styled by the marks
/// covering it.
pub fn excerpt(html: &mut String, text: &str, marks: &[Mark]) {
    let floor = |mut b: usize| {
        b = b.min(text.len());
        while !text.is_char_boundary(b) {
            b -= 1;
        }
        b
    };
    let mut windows: Vec<(usize, usize)> =
        marks.iter().map(|m| (floor(m.start.saturating_sub(CONTEXT_BYTES)), floor(m.end.saturating_add(CONTEXT_BYTES)))).collect();
    windows.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for w in windows {
        match merged.last_mut() {
            Some(last) if w.0 <= last.1 => last.1 = last.1.max(w.1),
            _ => merged.push(w),
        }
    }
    for (k, &(lo, hi)) in merged.iter().enumerate() {
        if k > 0 || lo > 0 {
            html.push_str("<span class=\"gap\">&hellip;</span>");
        }
        let cuts: BTreeSet<usize> = marks.iter().flat_map(|m| [m.start, m.end]).map(floor).filter(|&b| b > lo && b < hi).chain([lo, hi]).collect();
        let cuts: Vec<usize> = cuts.into_iter().collect();
        for pair in cuts.windows(2) {
            piece(html, text, pair[0], pair[1], marks);
        }
    }
    if merged.last().is_some_and(|&(_, hi)| hi < text.len()) {
        html.push_str("<span class=\"gap\">&hellip;</span>");
    }
}

/// The text `[a, b)` with rank numbers for the items starting at `a`, on yellow if gold, underlined in the
/// colour of every row whose items cover it.
fn piece(html: &mut String, text: &str, a: usize, b: usize, marks: &[Mark]) {
    let mut starts: Vec<&Mark> = marks.iter().filter(|m| m.first && m.start == a).collect();
    starts.sort_by_key(|m| (m.row, m.rank));
    for m in starts {
        let c = m.row.expect("filtered");
        let _ = write!(html, "<sup class=\"rank\" data-row=\"{c}\" style=\"color:{}\">{}</sup>", COLOURS[c], m.rank);
    }
    let covering: Vec<&Mark> = marks.iter().filter(|m| m.start <= a && b <= m.end && m.start < m.end).collect();
    let body = escape(&text[a..b]);
    if covering.is_empty() {
        html.push_str(&body);
        return;
    }
    let gold = covering.iter().any(|m| m.row.is_none());
    let rows: BTreeSet<usize> = covering.iter().filter_map(|m| m.row).collect();
    let shadows: Vec<String> = rows.iter().enumerate().map(|(i, &c)| format!("inset 0 -{}px 0 {}", 3 * (i + 1), COLOURS[c])).collect();
    let title: Vec<String> = covering.iter().map(|m| m.row.map_or("gold".to_owned(), |c| format!("row {} #{}", c + 1, m.rank))).collect();
    let class = if gold { " class=\"gold\"" } else { "" };
    let data: Vec<String> = rows.iter().map(usize::to_string).collect();
    let _ = write!(
        html,
        "<span{class} data-rows=\"{}\" style=\"box-shadow:{}\" title=\"{}\">{body}</span>",
        data.join(" "),
        if shadows.is_empty() { "none".to_owned() } else { shadows.join(",") },
        escape(&title.join(", "))
    );
}

const STYLE: &str = "body{font:14px/1.5 system-ui,sans-serif;margin:1em 2em;max-width:80em}\
h1{font-size:1.4em}.setting,.code{color:#444}.sw{display:inline-block;width:1em;height:1em;border-radius:2px}\
table{border-collapse:collapse}td,th{padding:2px 8px;text-align:left;vertical-align:top;border-bottom:1px solid #eee}\
details.query{border-top:1px solid #ccc;padding:4px 0}summary{cursor:pointer}.n{color:#888;margin-right:.5em}\
.chip{display:inline-block;min-width:2em;text-align:center;border:2px solid;border-radius:3px;font-size:12px;margin-left:2px}\
.items ol{margin:0;padding-left:1.5em}.path{color:#555;font-size:12px}.doc h4{margin:.6em 0 .2em}\
.text{white-space:pre-wrap;line-height:2.1;font-family:ui-serif,Georgia,serif;background:#fafafa;padding:6px}\
.gold{background:#fff3a0}.gap{color:#999;padding:0 .5em}.rank{font-size:10px;font-weight:bold;margin-right:1px}";

/// Opens the block an anchor points at; the buttons open or close every block.
const SCRIPT: &str = "function show(){var e=document.getElementById(location.hash.slice(1));if(e&&e.tagName==='DETAILS')e.open=true;}\
function all(o){document.querySelectorAll('details.query').forEach(function(d){d.open=o;});}\
window.addEventListener('hashchange',show);show();";
