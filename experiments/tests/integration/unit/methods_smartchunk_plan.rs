//! The unit tests of `arbor_experiments::methods::smartchunk::plan` (src/methods/smartchunk/plan.rs).

use arbor_datasets::DocSpan;
use arbor_datasets::Span;
use arbor_trainers::planner::{Outcome, PlanExample};

use arbor_experiments::methods::smartchunk::plan::*;

/// Items [0, 10) and [20, 30) of document 0 against gold [5, 25) of document 0 and [0, 10) of
/// document 1: 10 of the 30 gold bytes held, 10 of the 20 handed-on bytes gold.
#[test]
fn gold_overlap_reads_recall_and_precision_in_bytes() {
    let at = |doc, s, e| DocSpan { doc, span: Span::new(s, e) };
    let (recall, precision) = gold_overlap(&[at(0, 0, 10), at(0, 20, 30)], &[at(0, 5, 25), at(1, 0, 10)]);
    assert!((recall - 10.0 / 30.0).abs() < 1e-12 && (precision - 0.5).abs() < 1e-12, "{recall} {precision}");
    // Overlapping items count once; nothing handed on holds nothing.
    assert_eq!(gold_overlap(&[at(0, 5, 15), at(0, 10, 25)], &[at(0, 5, 25)]), (1.0, 1.0));
    assert_eq!(gold_overlap(&[], &[at(0, 5, 25)]), (0.0, 0.0));
}

/// Five plans over three queries' worth of levels: counted, most frequent first, ties in plan order,
/// shares of all the plans, an unparsed plan named.
#[test]
fn the_distribution_names_every_plan_with_its_share() {
    let names = ["unit", "section", "document"];
    let plans = [Some((0, 1)), None, Some((2, 2)), Some((0, 1)), Some((1, 2))];
    let text = distribution(&plans, "unparsed", |l| names[l].to_owned());
    assert_eq!(text, "unit-section 40.0 %, unparsed 20.0 %, section-document 20.0 %, document 20.0 %");
    assert_eq!(distribution(&[], "none", |l| names[l].to_owned()), "");
}

/// Two levels, plans (0, 0), (0, 1), (1, 1): the highest R_QA wins, the first of equals, none when
/// every plan earns 0.
#[test]
fn the_best_plan_is_the_one_of_highest_r_qa() {
    let with = |qa: [f64; 3]| {
        let outcome = |qa| Outcome { recovered: qa > 0.0, chunk_cost: 1, qa };
        // Index lo * 2 + hi: (0, 0) at 0, (0, 1) at 1, (1, 1) at 3; index 2, (1, 0), is no plan.
        PlanExample { features: vec![], label: None, outcomes: vec![outcome(qa[0]), outcome(qa[1]), outcome(9.0), outcome(qa[2])] }
    };
    assert_eq!(best_qa(&with([0.1, 0.3, 0.2]), 2), Some((0, 1)));
    assert_eq!(best_qa(&with([0.2, 0.1, 0.2]), 2), Some((0, 0)));
    assert_eq!(best_qa(&with([0.0, 0.0, 0.0]), 2), None);
}
