//! The unit tests of `arbor_experiments::bench_step` (src/bench_step.rs).

use arbor_experiments::bench_step::*;
use arbor_trainers::data::TrainDoc;

fn doc(tokens: usize, queries: usize) -> TrainDoc {
    let query = arbor_trainers::data::TrainQuery { text: String::new(), pooled: vec![], ids: vec![], positive: 0, gold: vec![] };
    TrainDoc { units: vec![], pooled: vec![], ids: vec![vec![0; tokens]], pairs: vec![], tokens: vec![], queries: vec![query; queries] }
}

#[test]
fn the_median_and_the_longest_document_with_a_full_batch() {
    let docs = [doc(50, 4), doc(10, 4), doc(900, 1), doc(30, 4), doc(70, 4)];
    // With a full batch of 4: 10, 30, 50, 70 tokens; the lower median and the largest.
    assert_eq!(median_and_longest(&docs, 4), Some((3, 4)));
    // None has 8 queries: every document with a query.
    assert_eq!(median_and_longest(&docs, 8), Some((0, 2)));
    assert_eq!(median_and_longest(&[doc(10, 0)], 4), None);
}

#[test]
fn a_joint_step_starts_at_the_median_then_reads_the_longer_documents_then_the_shortest() {
    let docs = [doc(50, 4), doc(10, 4), doc(900, 1), doc(30, 4), doc(70, 4)];
    // The dense cases' median (3: 30 tokens) first, then 50 and 70 tokens, then wrapping to 10.
    assert_eq!(step_documents(&docs, 3, 4, 4), vec![3, 0, 4, 1]);
    assert_eq!(step_documents(&docs, 3, 4, 1), vec![3]);
    assert_eq!(step_documents(&docs, 3, 4, 9), vec![3, 0, 4, 1], "no more than the pool holds");
    // The row asks for batches of 8, which no document fills: every document with a query, the median
    // still first.
    assert_eq!(step_documents(&docs, 3, 8, 3), vec![3, 0, 4]);
    // Two documents fill a batch of 8 and the median (30 tokens) is not one of them: it still comes first
    // (before, a median outside the row's pool sent the step to the shortest document of the pool).
    let full = [doc(50, 8), doc(10, 8), doc(30, 4)];
    assert_eq!(step_documents(&full, 2, 8, 3), vec![2, 0, 1], "the median need not be in the row's pool");
}
