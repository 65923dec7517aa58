//! A folder of one's own documents, for `arbor index`: every file under it, recursively, by extension.
//!
//! | extension | document |
//! |---|---|
//! | `.txt`, `.text` | the file as it is |
//! | `.md`, `.markdown` | the file as it is (its `#` headings are lines the heading hierarchy reads) |
//! | `.html`, `.htm` | its visible text: tags removed, `script` / `style` / `head` dropped, block elements on lines of their own, entities decoded |
//! | `.pdf` | the text of its pages, by the `pdf-extract` crate (text PDFs; a scanned PDF holds no text and is skipped as empty) |
//! | `.jsonl` | one document per line in arbor's format (`{"id", "text", "title"?}`), keyed `path#id`; a file of queries (lines with `doc_ids`, an arbor corpus's queries.jsonl) is skipped |
//!
//! Anything else is skipped and counted, as is an empty, unreadable or damaged file (a PDF the extractor
//! cannot parse, or on which it fails); [`read_folder`] never stops at one bad file. Keys are paths relative to the folder,
//! with `/` between components, sorted: the order documents are indexed in.

use std::path::{Path, PathBuf};

use crate::corpus::Document;

/// One document read from a file.
#[derive(Debug, Clone, PartialEq)]
pub struct FileDocument {
    /// Its path relative to the folder (`path#id` for a line of a JSONL file).
    pub key: String,
    /// The file it came from.
    pub file: PathBuf,
    pub title: String,
    pub text: String,
}

/// A file left out, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    pub file: PathBuf,
    pub reason: String,
}

/// Every document under `dir`, sorted by key, and the files skipped. Fails only when `dir` itself cannot
/// be read.
pub fn read_folder(dir: &Path) -> std::io::Result<(Vec<FileDocument>, Vec<Skipped>)> {
    let mut files = Vec::new();
    walk(dir, &mut files)?;
    files.sort();
    let (mut docs, mut skipped) = (Vec::new(), Vec::new());
    for file in files {
        let key = relative_key(dir, &file);
        match read_file(&file, &key) {
            Ok(found) if found.is_empty() => skipped.push(Skipped { file, reason: "holds no text".into() }),
            Ok(found) => docs.extend(found),
            Err(reason) => skipped.push(Skipped { file, reason }),
        }
    }
    docs.sort_by(|a, b| a.key.cmp(&b.key));
    Ok((docs, skipped))
}

/// The key of a file: its path below `dir`, components joined by `/`.
pub fn relative_key(dir: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(dir).unwrap_or(file);
    rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        if entry.file_type()?.is_dir() {
            walk(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// The documents of one file (none when it holds no text); the reason it cannot be read otherwise.
pub fn read_file(file: &Path, key: &str) -> Result<Vec<FileDocument>, String> {
    let ext = file.extension().map(|e| e.to_string_lossy().to_lowercase()).unwrap_or_default();
    let kind = match ext.as_str() {
        "txt" | "text" | "md" | "markdown" => Kind::Plain,
        "html" | "htm" => Kind::Html,
        "jsonl" => Kind::Jsonl,
        "pdf" => Kind::Pdf,
        _ => return Err(format!("not a document arbor reads (.{ext}); it reads .txt, .md, .html, .pdf and .jsonl")),
    };
    let bytes = std::fs::read(file).map_err(|e| format!("cannot be read: {e}"))?;
    let text = match kind {
        Kind::Pdf => pdf_text(&bytes)?,
        _ => String::from_utf8(bytes).map_err(|e| format!("is not UTF-8 text (byte {})", e.utf8_error().valid_up_to()))?,
    };
    let one = |title: String, text: String| FileDocument { key: key.to_owned(), file: file.to_owned(), title, text };
    let docs = match kind {
        Kind::Plain | Kind::Pdf => vec![one(String::new(), text)],
        Kind::Html => {
            let (title, body) = html_text(&text);
            vec![one(title, body)]
        }
        Kind::Jsonl => {
            let mut docs = Vec::new();
            for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                let value: serde_json::Value = serde_json::from_str(line).map_err(|e| format!("line {}: {e}", i + 1))?;
                if value.get("doc_ids").is_some() {
                    return Err(format!("holds queries (line {} has doc_ids), not documents", i + 1));
                }
                let doc: Document = serde_json::from_value(value).map_err(|e| format!("line {}: {e}", i + 1))?;
                docs.push(FileDocument { key: format!("{key}#{}", doc.id), file: file.to_owned(), title: doc.title, text: doc.text });
            }
            docs
        }
    };
    Ok(docs.into_iter().filter(|d| !d.text.trim().is_empty()).collect())
}

enum Kind {
    Plain,
    Html,
    Pdf,
    Jsonl,
}

/// The text of a PDF's pages (lines as the extractor lays them out, trailing spaces dropped). The
/// extractor can panic on a damaged file: that is caught and reported as the file's reason.
pub fn pdf_text(bytes: &[u8]) -> Result<String, String> {
    match std::panic::catch_unwind(|| pdf_extract::extract_text_from_mem(bytes)) {
        Ok(Ok(text)) => Ok(text.lines().map(str::trim_end).collect::<Vec<_>>().join("\n").trim().to_owned()),
        Ok(Err(e)) => Err(format!("is not a PDF arbor can read ({e})")),
        Err(_) => Err("is a PDF the extractor (pdf-extract) fails on: damaged or unsupported".into()),
    }
}

/// Block elements: each starts and ends a line.
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "br",
    "li",
    "ul",
    "ol",
    "tr",
    "table",
    "section",
    "article",
    "header",
    "footer",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "pre",
    "blockquote",
    "main",
    "nav",
    "aside",
    "dd",
    "dt",
    "hr",
    "td",
    "th",
];
/// Elements whose content is not text.
const HIDDEN: &[&str] = &["script", "style", "head", "noscript", "template"];

/// The `<title>` and the visible text of an HTML page: tags removed, block elements on their own lines
/// (paragraphs apart by a blank line), runs of spaces collapsed, entities decoded.
pub fn html_text(html: &str) -> (String, String) {
    let lower = html.to_ascii_lowercase();
    let title = lower.find("<title").and_then(|s| {
        let open = s + lower[s..].find('>')? + 1;
        let close = open + lower[open..].find("</title")?;
        Some(decode(html[open..close].trim()))
    });
    let mut out = String::new();
    let mut at = 0;
    while let Some(lt) = html[at..].find('<').map(|i| at + i) {
        push_text(&mut out, &decode(&html[at..lt]));
        let Some(gt) = html[lt..].find('>').map(|i| lt + i) else { break };
        let tag = lower[lt + 1..gt].trim_start_matches('/').split(|c: char| c.is_whitespace() || c == '/').next().unwrap_or("");
        at = gt + 1;
        if lower[lt + 1..].starts_with("!--") {
            at = lower[lt..].find("-->").map_or(html.len(), |i| lt + i + 3);
        } else if HIDDEN.contains(&tag) && !lower[lt + 1..].starts_with('/') {
            at = lower[gt..].find(&format!("</{tag}")).map_or(html.len(), |i| gt + i);
        } else if BLOCKS.contains(&tag) {
            let gap = if matches!(tag, "br" | "li" | "tr" | "td" | "th" | "dd" | "dt") { "\n" } else { "\n\n" };
            while out.ends_with(' ') {
                out.pop();
            }
            if !out.is_empty() && !out.ends_with(gap) {
                out.truncate(out.trim_end_matches('\n').len());
                out.push_str(gap);
            }
        }
    }
    if at < html.len() {
        push_text(&mut out, &decode(&html[at..]));
    }
    (title.unwrap_or_default(), out.trim().to_owned())
}

/// Appends text with whitespace runs collapsed to one space (none at the start of a line).
fn push_text(out: &mut String, text: &str) {
    for c in text.chars() {
        if c.is_whitespace() {
            if !(out.is_empty() || out.ends_with(' ') || out.ends_with('\n')) {
                out.push(' ');
            }
        } else {
            out.push(c);
        }
    }
}

/// HTML character references: the five named ones, `&nbsp;` and numeric ones; others stay as written.
fn decode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let end = rest.char_indices().take_while(|&(i, _)| i < 12).find(|&(_, c)| c == ';').map(|(i, _)| i);
        let decoded = end.and_then(|e| {
            let name = &rest[1..e];
            let c = match name {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" | "#39" => Some('\''),
                "nbsp" => Some(' '),
                _ => name
                    .strip_prefix("#x")
                    .or_else(|| name.strip_prefix("#X"))
                    .and_then(|h| u32::from_str_radix(h, 16).ok())
                    .or_else(|| name.strip_prefix('#').and_then(|d| d.parse().ok()))
                    .and_then(char::from_u32),
            };
            c.map(|c| (c, e + 1))
        });
        match decoded {
            Some((c, len)) => {
                out.push(c);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_keeps_visible_text_on_lines_and_decodes_entities() {
        let page = "<html><head><title>Lease &amp; Co</title><style>p{color:red}</style></head><body>\
            <h1>Terms</h1><p>The  tenant\n pays &lt;rent&gt; &#8364;5&nbsp;monthly.</p><script>var x = '<p>';</script>\
            <!-- a <p> comment --><ul><li>One</li><li>Two &#x2014; three</li></ul></body></html>";
        let (title, text) = html_text(page);
        assert_eq!(title, "Lease & Co");
        assert_eq!(text, "Terms\n\nThe tenant pays <rent> €5 monthly.\n\nOne\nTwo — three");
    }

    #[test]
    fn a_folder_reads_every_kind_and_reports_what_it_skips() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("sub")).unwrap();
        std::fs::write(d.join("b.txt"), "Plain text.").unwrap();
        std::fs::write(d.join("sub/a.md"), "# Heading\n\nBody.").unwrap();
        std::fs::write(d.join("c.html"), "<p>Hello <b>there</b></p>").unwrap();
        std::fs::write(d.join("d.jsonl"), "{\"id\": \"x\", \"text\": \"One.\"}\n\n{\"id\": \"y\", \"title\": \"Y\", \"text\": \"Two.\"}\n").unwrap();
        std::fs::write(d.join("empty.txt"), "  \n").unwrap();
        std::fs::write(d.join("bad.txt"), [0x66, 0xff, 0x66]).unwrap();
        std::fs::write(d.join("paper.pdf"), "%PDF-1.4").unwrap();
        std::fs::write(d.join("lease.pdf"), pdf(&["The tenant pays the rent (monthly).", "Notice is due in writing."])).unwrap();
        std::fs::write(d.join("queries.jsonl"), "{\"id\": \"q\", \"text\": \"Why?\", \"doc_ids\": [\"x\"]}\n").unwrap();
        std::fs::write(d.join(".hidden.txt"), "not read").unwrap();
        let (docs, skipped) = read_folder(d).unwrap();
        let keys: Vec<&str> = docs.iter().map(|x| x.key.as_str()).collect();
        assert_eq!(keys, ["b.txt", "c.html", "d.jsonl#x", "d.jsonl#y", "lease.pdf", "sub/a.md"]);
        assert_eq!(docs[4].text, "The tenant pays the rent (monthly).\nNotice is due in writing.");
        assert_eq!(docs[1].text, "Hello there");
        assert_eq!((docs[3].title.as_str(), docs[3].text.as_str()), ("Y", "Two."));
        let why: Vec<(String, &str)> =
            skipped.iter().map(|s| (s.file.file_name().unwrap().to_string_lossy().into_owned(), s.reason.as_str())).collect();
        assert_eq!(why.len(), 4, "{why:?}");
        assert!(why[0].0 == "bad.txt" && why[0].1.contains("not UTF-8 text (byte 1)"), "{why:?}");
        assert!(why[1].0 == "empty.txt" && why[1].1 == "holds no text", "{why:?}");
        assert!(why[2].0 == "paper.pdf" && why[2].1.contains("not a PDF arbor can read"), "{why:?}");
        assert!(why[3].0 == "queries.jsonl" && why[3].1.contains("holds queries"), "{why:?}");
    }

    /// A one-page PDF whose lines are `lines`, in Helvetica (a standard font: nothing embedded).
    fn pdf(lines: &[&str]) -> Vec<u8> {
        let mut content = String::from("BT /F1 12 Tf 72 720 Td 16 TL");
        for l in lines {
            content.push_str(&format!(" ({}) Tj T*", l.replace('\\', "\\\\").replace('(', "\\(").replace(')', "\\)")));
        }
        content.push_str(" ET");
        let objects = [
            "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
            "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_owned(),
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>".to_owned(),
            format!("<< /Length {} >>\nstream\n{content}\nendstream", content.len()),
            "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".to_owned(),
        ];
        let mut out = b"%PDF-1.4\n".to_vec();
        let mut offsets = Vec::new();
        for (i, o) in objects.iter().enumerate() {
            offsets.push(out.len());
            out.extend(format!("{} 0 obj\n{o}\nendobj\n", i + 1).bytes());
        }
        let xref = out.len();
        out.extend(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).bytes());
        for o in offsets {
            out.extend(format!("{o:010} 00000 n \n").bytes());
        }
        out.extend(format!("trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1).bytes());
        out
    }
}
