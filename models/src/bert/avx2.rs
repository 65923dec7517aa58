//! The matrix product on gemm's AVX2 + FMA microkernels, for a processor that would otherwise take its
//! AVX-512 ones: what `ARBOR_KERNELS=avx2` asks for ([`crate::processor::Kernels`]), so the two paths can
//! be timed and checked against each other on one machine. gemm picks its microkernels once per process
//! behind a private pointer; this calls its generic driver with the FMA microkernels itself, after gemm's
//! own first step (a column-oriented destination is computed as its transpose). The strides are arbor's:
//! never negative.

use gemm_common::simd::MixedSimd;
use gemm_f32::microkernel::fma::f32 as fma;

/// The f32 lanes of one AVX2 register, gemm's `N` for these microkernels.
const LANES: usize = 8;

/// `dst = alpha * dst + beta * lhs * rhs` (dst read only if `read_dst`), as `gemm::gemm` computes it.
///
/// # Safety
/// Every element the shapes and strides address must lie inside the buffers the pointers come from, and
/// the processor must have AVX2 and FMA (`Kernels::chosen` takes this path only then).
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn gemm(
    [m, n, k]: [usize; 3],
    (dst, dst_cs, dst_rs): (*mut f32, isize, isize),
    read_dst: bool,
    (lhs, lhs_cs, lhs_rs): (*const f32, isize, isize),
    (rhs, rhs_cs, rhs_rs): (*const f32, isize, isize),
    (alpha, beta): (f32, f32),
    parallelism: gemm::Parallelism,
) {
    let simd = <gemm_common::simd::V3 as MixedSimd<f32, f32, f32, f32>>::try_new().expect("the processor has AVX2 and FMA");
    // (dst)^T = rhs^T lhs^T: the microkernels prefer a destination whose columns are not its contiguous axis.
    let (m, n, dst_cs, dst_rs, lhs, lhs_cs, lhs_rs, rhs, rhs_cs, rhs_rs) = if dst_cs.abs() < dst_rs.abs() {
        (n, m, dst_rs, dst_cs, rhs, rhs_rs, rhs_cs, lhs, lhs_rs, lhs_cs)
    } else {
        (m, n, dst_cs, dst_rs, lhs, lhs_cs, lhs_rs, rhs, rhs_cs, rhs_rs)
    };
    // SAFETY: the caller's contract; the microkernels are the FMA ones the simd token vouches for.
    unsafe {
        gemm_common::gemm::gemm_basic_generic::<_, f32, LANES, { fma::MR_DIV_N * LANES }, { fma::NR }, { fma::MR_DIV_N }, { fma::H_M }, { fma::H_N }>(
            simd,
            m,
            n,
            k,
            dst,
            dst_cs,
            dst_rs,
            read_dst,
            lhs,
            lhs_cs,
            lhs_rs,
            rhs,
            rhs_cs,
            rhs_rs,
            alpha,
            beta,
            false,
            false,
            false,
            |a, b, c| a * b + c,
            &fma::UKR,
            &fma::H_UKR,
            false,
            parallelism,
        );
    }
}
