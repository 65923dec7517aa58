//! Rust source as the digest reads it: a list of tokens (words, string and character literals, `::` and
//! single punctuation), comments dropped, and every item under `#[cfg(test)]` cut out whole. The tokens,
//! in order, are the code: formatting and comments do not count, while any reordering does.

/// One token of Rust source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// An identifier, keyword or number (with its suffix).
    Word(String),
    /// A string, byte-string, raw-string or character literal, verbatim.
    Literal(String),
    /// `::`, or one punctuation character.
    Punct(String),
}

impl Token {
    pub fn is(&self, text: &str) -> bool {
        match self {
            Token::Word(w) | Token::Punct(w) => w == text,
            Token::Literal(_) => false,
        }
    }

    pub fn word(&self) -> Option<&str> {
        match self {
            Token::Word(w) => Some(w),
            _ => None,
        }
    }
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The tokens of `text`, comments left out.
pub fn tokens(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if let Some(end) = raw_string_end(&chars, i) {
            out.push(Token::Literal(chars[i..end].iter().collect()));
            i = end;
        } else if c == '"' || (c == 'b' && at(i + 1) == '"') || (c == 'c' && at(i + 1) == '"') {
            let start = i;
            i += if c == '"' { 1 } else { 2 };
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push(Token::Literal(chars[start..i.min(chars.len())].iter().collect()));
        } else if c == '\'' || (c == 'b' && at(i + 1) == '\'') {
            // A character literal ('a', '\n', '\u{..}', b'x'), else a lifetime or label ('a).
            let q = if c == '\'' { i } else { i + 1 };
            let close = if at(q + 1) == '\\' { (q + 2..chars.len()).find(|&j| chars[j] == '\'') } else { (at(q + 2) == '\'').then_some(q + 2) };
            match close {
                Some(end) => {
                    out.push(Token::Literal(chars[i..=end].iter().collect()));
                    i = end + 1;
                }
                None if c == '\'' => {
                    out.push(Token::Punct("'".into()));
                    i += 1;
                }
                None => {
                    out.push(Token::Word("b".into()));
                    i += 1;
                }
            }
        } else if is_word(c) {
            let start = i;
            while i < chars.len() && is_word(chars[i]) {
                i += 1;
            }
            out.push(Token::Word(chars[start..i].iter().collect()));
        } else if c == ':' && at(i + 1) == ':' {
            out.push(Token::Punct("::".into()));
            i += 2;
        } else {
            out.push(Token::Punct(c.to_string()));
            i += 1;
        }
    }
    out
}

/// Where a raw string starting at `i` (`r"..."`, `r#"..."#`, `br#"..."#`) ends, if one starts there.
fn raw_string_end(chars: &[char], i: usize) -> Option<usize> {
    let mut j = i;
    if chars.get(j) == Some(&'b') || chars.get(j) == Some(&'c') {
        j += 1;
    }
    if chars.get(j) != Some(&'r') || (i > 0 && is_word(chars[i - 1])) {
        return None;
    }
    j += 1;
    let hashes = chars[j..].iter().take_while(|&&c| c == '#').count();
    j += hashes;
    if chars.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < chars.len() {
        if chars[j] == '"' && chars[j + 1..].iter().take(hashes).filter(|&&c| c == '#').count() == hashes {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(chars.len())
}

/// `tokens` without the items marked `#[cfg(test)]` (a test module, whole, wherever it sits in the file; a
/// test-only function or `use`; a test-only field, variant or match arm), and nothing after them: an item
/// ends at its first `;` or `,` outside brackets, at the brace closing its body, or before the bracket
/// closing the block it sits in.
pub fn without_tests(tokens: Vec<Token>) -> Vec<Token> {
    const MARK: [&str; 7] = ["#", "[", "cfg", "(", "test", ")", "]"];
    let mut out = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        let marked = i + MARK.len() <= tokens.len() && MARK.iter().zip(&tokens[i..]).all(|(m, t)| t.is(m));
        if !marked {
            out.push(tokens[i].clone());
            i += 1;
            continue;
        }
        i += MARK.len();
        let mut depth = 0usize;
        while i < tokens.len() {
            let t = &tokens[i];
            if ["{", "(", "["].iter().any(|b| t.is(b)) {
                depth += 1;
            } else if ["}", ")", "]"].iter().any(|b| t.is(b)) {
                if depth == 0 {
                    break; // the enclosing block's end: kept
                }
                depth -= 1;
                if depth == 0 && t.is("}") {
                    i += 1;
                    break;
                }
            } else if (t.is(";") || t.is(",")) && depth == 0 {
                i += 1;
                break;
            }
            i += 1;
        }
    }
    out
}

/// `tokens` split into its `use` declarations (each from `use` to its `;`, a `pub` or `pub(..)` before it
/// dropped) and the rest, in order: imports are a set (rustfmt sorts them; their order means nothing),
/// the rest is code, whose order does.
pub fn split_uses(tokens: Vec<Token>) -> (Vec<Vec<Token>>, Vec<Token>) {
    let (mut uses, mut rest): (Vec<Vec<Token>>, Vec<Token>) = (Vec::new(), Vec::with_capacity(tokens.len()));
    let mut i = 0;
    while i < tokens.len() {
        if !tokens[i].is("use") {
            rest.push(tokens[i].clone());
            i += 1;
            continue;
        }
        // A visibility just before: `pub`, or `pub ( .. )`.
        if rest.last().is_some_and(|t| t.is(")"))
            && let Some(open) = rest.iter().rposition(|t| t.is("("))
        {
            if open > 0 && rest[open - 1].is("pub") {
                rest.truncate(open - 1);
            }
        } else if rest.last().is_some_and(|t| t.is("pub")) {
            rest.pop();
        }
        let end = (i..tokens.len()).find(|&j| tokens[j].is(";")).map_or(tokens.len(), |j| j + 1);
        uses.push(tokens[i..end].to_vec());
        i = end;
    }
    (uses, rest)
}

/// The tokens as one string: a space only between two words, so that formatting never counts.
pub fn text(tokens: &[Token]) -> String {
    let mut out = String::new();
    let mut last_word = false;
    for t in tokens {
        let (s, word) = match t {
            Token::Word(w) => (w.as_str(), true),
            Token::Literal(l) => (l.as_str(), false),
            Token::Punct(p) => (p.as_str(), false),
        };
        if word && last_word {
            out.push(' ');
        }
        out.push_str(s);
        last_word = word;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_formatting_do_not_count_but_literals_and_order_do() {
        let a = text(&tokens("fn f() -> u32 {\n    // why\n    g(1, /* two */ 2)\n}\n"));
        assert_eq!(a, text(&tokens("fn f()->u32{g(1,2)}")));
        assert_eq!(a, "fn f()->u32{g(1,2)}");
        assert_ne!(text(&tokens(r#"f("a{")"#)), text(&tokens(r#"f("a}")"#)));
        assert_eq!(text(&tokens(r##"let s = r#"x " y"#; let c = '}'; let l: &'a str;"##)), r##"let s=r#"x " y"#;let c='}';let l:&'a str;"##);
    }

    #[test]
    fn imports_are_taken_out_whatever_their_visibility() {
        let (uses, rest) = split_uses(tokens("use a::b;\npub use c::{d, e};\npub(crate) use f::g;\nfn h() { use i::j; k() }"));
        assert_eq!(uses.iter().map(|u| text(u)).collect::<Vec<_>>(), ["use a::b;", "use c::{d,e};", "use f::g;", "use i::j;"]);
        assert_eq!(text(&rest), "fn h(){k()}");
    }

    #[test]
    fn test_items_are_cut_wherever_they_sit() {
        let src = "fn a() {}\n#[cfg(test)]\nmod tests { fn t() { let s = \"}\"; } }\nfn b() { x += 1; }\n#[cfg(test)]\nuse z::w;\nfn c() {}";
        assert_eq!(text(&without_tests(tokens(src))), "fn a(){}fn b(){x+=1;}fn c(){}");
        // A test-only field, variant or match arm is cut alone: what follows it in its block still counts.
        let field = "struct S { #[cfg(test)] t: Vec<(u8, u8)>, a: u32, b: u64 }";
        assert_eq!(text(&without_tests(tokens(field))), "struct S{a:u32,b:u64}");
        let last = "enum E { A, #[cfg(test)] T { x: u8 } }\nfn f() {}";
        assert_eq!(text(&without_tests(tokens(last))), "enum E{A,}fn f(){}");
        let arm = "match x { #[cfg(test)] 0 => t(a, b), 1 => one(), _ => { other() } }";
        assert_eq!(text(&without_tests(tokens(arm))), "match x{1=>one(),_=>{other()}}");
        let (edited, before) = (arm.replace("one()", "two()"), without_tests(tokens(arm)));
        assert_ne!(text(&without_tests(tokens(&edited))), text(&before), "an edit after a test-only arm counts");
    }
}
