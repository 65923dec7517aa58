//! The unit tests of `arbor_experiments::inspect::page` (src/inspect/page.rs).

use arbor_experiments::inspect::page::*;

#[test]
fn excerpts_mark_gold_and_items_and_escape_text() {
    let text = "a<b & c said \"x\" then more words follow here";
    let marks = [Mark { start: 0, end: 4, row: None, rank: 0, first: false }, Mark { start: 2, end: 8, row: Some(1), rank: 2, first: true }];
    let mut html = String::new();
    excerpt(&mut html, text, &marks);
    // Pieces: [0,2) gold; [2,4) gold + row 1 (its rank number first); [4,8) row 1; the rest plain.
    assert!(html.starts_with("<span class=\"gold\" data-rows=\"\" style=\"box-shadow:none\" title=\"gold\">a&lt;</span>"), "{html}");
    assert!(html.contains("<sup class=\"rank\" data-row=\"1\" style=\"color:#D55E00\">2</sup><span class=\"gold\" data-rows=\"1\""), "{html}");
    assert!(html.contains("title=\"gold, row 2 #2\">b </span>"), "{html}");
    assert!(html.ends_with("said &quot;x&quot; then more words follow here"), "the window reaches the end: no gap: {html}");
}

#[test]
fn windows_apart_are_separated_by_a_gap_and_cut_on_character_boundaries() {
    let text = format!("{}é{}", "x".repeat(400), "y".repeat(400));
    let marks = [Mark { start: 0, end: 1, row: Some(0), rank: 1, first: true }, Mark { start: 799, end: 801, row: None, rank: 0, first: false }];
    let mut html = String::new();
    excerpt(&mut html, &text, &marks);
    assert_eq!(html.matches("&hellip;").count(), 1, "two windows, the second reaching the end: {html}");
    let mut near = String::new();
    // A window edge falling inside "é" (bytes 400..402) moves back to its start.
    excerpt(&mut near, &text, &[Mark { start: 561, end: 562, row: None, rank: 0, first: false }]);
    assert!(near.starts_with("<span class=\"gap\">&hellip;</span>é"), "{near}");
}
