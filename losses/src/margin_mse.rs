//! MarginMSE, distillation from a cross-encoder into a bi-encoder (Hofstätter et al., 2020, "Improving
//! Efficient Neural Ranking Models with Cross-Architecture Knowledge Distillation", arXiv 2010.02666,
//! eq. 1; sentence-transformers' MarginMSELoss): the student matches the teacher's *margin* between a
//! query's positive and each negative, not its scores, so the two may live on different scales up to a
//! shift per query. Over a group holding the positive first, then its negatives:
//!
//! ```text
//! L_MarginMSE = 1/(Q (G-1)) sum_q sum_{n=1}^{G-1} ( (s(q, p) - s(q, n)) - (t(q, p) - t(q, n)) )^2
//! ```
//!
//! with s the student's scores (arbor's bi-encoder: cos / tau) and t the teacher's.
//!
//! # Shapes
//! - `student`, `teacher`: `[Q, G]`, column 0 the positive of each group, G >= 2; returns `[1]`

use burn::tensor::Tensor;
use burn::tensor::backend::Backend;

pub fn margin_mse<B: Backend>(student: Tensor<B, 2>, teacher: Tensor<B, 2>) -> Tensor<B, 1> {
    let [q, g] = student.dims();
    assert_eq!([q, g], teacher.dims(), "margin_mse: the student's and the teacher's scores have one shape");
    assert!(g >= 2, "margin_mse: a group holds a positive and at least one negative");
    let margins = |s: Tensor<B, 2>| s.clone().slice([0..q, 0..1]) - s.slice([0..q, 1..g]);
    (margins(student) - margins(teacher)).powi_scalar(2).mean()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::t;
    use arbor_models::DefaultBackend as B;
    use burn::backend::Autodiff;

    #[test]
    fn hand_checked_values() {
        // One group: student margins 1 - 0 = 1 and 1 - 3 = -2; teacher margins 2 and 0. Errors -1 and -2: (1 + 4) / 2.
        let got: f32 = margin_mse(t::<B>(&[1.0, 0.0, 3.0], 1), t::<B>(&[5.0, 3.0, 5.0], 1)).into_scalar();
        assert!((got - 2.5).abs() < 1e-6, "{got}");
        // Two groups of two: errors 0.5 and -1: (0.25 + 1) / 2.
        let got: f32 = margin_mse(t::<B>(&[1.0, 0.0, 0.0, 0.0], 2), t::<B>(&[0.5, 0.0, 1.0, 0.0], 2)).into_scalar();
        assert!((got - 0.625).abs() < 1e-6, "{got}");
    }

    /// Zero wherever the student is the teacher shifted by any amount per query; positive otherwise.
    #[test]
    fn the_loss_ignores_a_shift_per_query_and_nothing_else() {
        let teacher = [2.0, -1.0, 0.5, 0.3, 0.7, -4.0];
        for (a, b) in [(0.0, 0.0), (3.0, -7.5), (-1.25, 100.0)] {
            let student: Vec<f32> = teacher.iter().enumerate().map(|(i, x)| x + if i < 3 { a } else { b }).collect();
            let got: f32 = margin_mse(t::<B>(&student, 2), t::<B>(&teacher, 2)).into_scalar();
            assert!(got.abs() < 1e-9, "shift ({a}, {b}): {got}");
        }
        let mut off = teacher;
        off[4] += 0.1;
        assert!(margin_mse(t::<B>(&off, 2), t::<B>(&teacher, 2)).into_scalar() > 0.0);
    }

    /// dL/ds_p = 2/(Q(G-1)) sum_n e_n, dL/ds_n = -2/(Q(G-1)) e_n, with e_n the margin's error.
    #[test]
    fn the_gradient_moves_the_margin_toward_the_teachers() {
        let student = t::<Autodiff<B>>(&[1.0, 0.0, 3.0], 1).require_grad();
        let grads = margin_mse(student.clone(), t::<Autodiff<B>>(&[5.0, 3.0, 5.0], 1)).backward();
        let g = student.grad(&grads).unwrap().into_data().to_vec::<f32>().unwrap();
        // Errors e = (-1, -2): dL/ds_p = (2/2)(-3) = -3, dL/ds_1 = 1, dL/ds_2 = 2.
        for (got, want) in g.iter().zip([-3.0, 1.0, 2.0]) {
            assert!((got - want).abs() < 1e-6, "{g:?}");
        }
    }
}
