//! The processor a speed figure was measured on: its model name, the SIMD extensions it offers that the CPU
//! kernels may use, and the path the matrix products take on it. `gemm` (the encoder's dense layers and
//! attention products) is built with its `x86-v4` AVX-512 microkernels (the workspace's Cargo.toml) and
//! picks them at run time where the processor has `avx512f`, AVX2 + FMA elsewhere. `arbor cpu` prints it,
//! and so do the step and encoder benchmarks beside every figure.

/// The extensions reported, in this order, where the processor has them.
const FEATURES: [&str; 9] = ["sse4.2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512vnni", "avx512bf16"];

/// The processor's model name (Linux's /proc/cpuinfo), or what the platform says it is.
pub fn model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| info.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split_once(':')).map(|(_, m)| m.trim().to_owned()))
        .unwrap_or_else(|| format!("{} ({})", std::env::consts::ARCH, std::env::consts::OS))
}

/// The extensions this processor offers, of those the CPU kernels may use (SSE 4.2 to AVX-512 BF16).
pub fn features() -> Vec<&'static str> {
    #[cfg(target_arch = "x86_64")]
    {
        let has = |f: &str| match f {
            "sse4.2" => std::arch::is_x86_feature_detected!("sse4.2"),
            "avx" => std::arch::is_x86_feature_detected!("avx"),
            "avx2" => std::arch::is_x86_feature_detected!("avx2"),
            "fma" => std::arch::is_x86_feature_detected!("fma"),
            "avx512f" => std::arch::is_x86_feature_detected!("avx512f"),
            "avx512bw" => std::arch::is_x86_feature_detected!("avx512bw"),
            "avx512vl" => std::arch::is_x86_feature_detected!("avx512vl"),
            "avx512vnni" => std::arch::is_x86_feature_detected!("avx512vnni"),
            "avx512bf16" => std::arch::is_x86_feature_detected!("avx512bf16"),
            _ => false,
        };
        FEATURES.into_iter().filter(|f| has(f)).collect()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        Vec::new()
    }
}

/// The path the matrix products take here: gemm's AVX-512 microkernels, its AVX2 + FMA ones, or its
/// portable ones.
pub fn kernel_path(features: &[&str]) -> &'static str {
    if features.contains(&"avx512f") {
        "gemm AVX-512 (x86-v4) microkernels"
    } else if features.contains(&"avx2") && features.contains(&"fma") {
        "gemm AVX2 + FMA microkernels"
    } else {
        "gemm portable microkernels"
    }
}

/// One line: model, extensions, kernel path and the threads the products may use.
pub fn describe() -> String {
    let features = features();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("processor: {}; SIMD: {}; kernels: {}; {threads} hardware threads", model(), features.join(" "), kernel_path(&features))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_path_follows_the_features() {
        assert_eq!(kernel_path(&["avx2", "fma", "avx512f"]), "gemm AVX-512 (x86-v4) microkernels");
        assert_eq!(kernel_path(&["avx2", "fma"]), "gemm AVX2 + FMA microkernels");
        assert_eq!(kernel_path(&[]), "gemm portable microkernels");
        let line = describe();
        assert!(line.starts_with("processor: ") && line.contains("kernels: gemm"), "{line}");
    }
}
