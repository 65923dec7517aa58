//! The processor a speed figure was measured on: its model name, the SIMD extensions it offers that the CPU
//! kernels may use, and the path the matrix products take on it ([`Kernels`]). `gemm` (the encoder's dense
//! layers and attention products) is built with its `x86-v4` AVX-512 microkernels (the workspace's
//! Cargo.toml) and picks them at run time where the processor has `avx512f`, AVX2 + FMA elsewhere;
//! `ARBOR_KERNELS=avx2` makes arbor's own products take gemm's AVX2 + FMA microkernels on a processor with
//! AVX-512 too ([`crate::bert::cpu`]), so both paths can be timed and tested against each other on one
//! machine. `arbor cpu` prints it, and so do the step and encoder benchmarks beside every figure.

use std::sync::OnceLock;

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

/// The optimisation level this crate was compiled at (`3` in a release build, `0` in a debug one),
/// recorded by its build script.
pub const OPT_LEVEL: &str = env!("ARBOR_MODELS_OPT_LEVEL");

/// Refuses to time a build slower than the one users run: a benchmark calls it first, with the command that
/// builds it right (`cargo bench --profile release ...`; at opt-level 1 the encoder runs at about half its
/// speed).
pub fn ensure_release_build(command: &str) -> Result<(), String> {
    match OPT_LEVEL {
        "3" => Ok(()),
        level => Err(format!("arbor-models was compiled at opt-level {level}, not as users run it: {command}")),
    }
}

/// The environment variable that picks the microkernels: `avx2` for AVX2 + FMA on a processor that has
/// AVX-512 too; unset (or `auto`) for the processor's best.
pub const KERNELS_VAR: &str = "ARBOR_KERNELS";

/// The microkernels the CPU matrix products take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernels {
    /// gemm's AVX-512 (x86-v4) microkernels: the processor has avx512f.
    Avx512,
    /// gemm's AVX2 + FMA microkernels: the processor's best, or asked for by `ARBOR_KERNELS=avx2`.
    Avx2 { forced: bool },
    /// gemm's portable ones.
    Portable,
}

impl Kernels {
    /// The path for a processor with `features` when `asked` (the variable's value) asks for one: the
    /// processor's best unless `avx2` is asked where it has AVX2 and FMA; a value it cannot honour is
    /// said in the `Err`, beside the path taken instead.
    pub fn of(features: &[&str], asked: Option<&str>) -> (Kernels, Option<String>) {
        let has = |f: &str| features.contains(&f);
        let best = if has("avx512f") {
            Kernels::Avx512
        } else if has("avx2") && has("fma") {
            Kernels::Avx2 { forced: false }
        } else {
            Kernels::Portable
        };
        match asked.map(|a| a.trim().to_ascii_lowercase()) {
            None => (best, None),
            Some(a) if a.is_empty() || a == "auto" => (best, None),
            Some(a) if a == "avx2" && has("avx2") && has("fma") => (Kernels::Avx2 { forced: best == Kernels::Avx512 }, None),
            Some(a) if a == "avx2" => (best, Some(format!("{KERNELS_VAR}=avx2: this processor lacks AVX2 or FMA"))),
            Some(a) => (best, Some(format!("{KERNELS_VAR}={a:?} is not a path (avx2, or auto)"))),
        }
    }

    /// This process's path, read once: the processor's features and `ARBOR_KERNELS`; a value it cannot
    /// honour is said once on standard error.
    pub fn chosen() -> Kernels {
        static CHOSEN: OnceLock<Kernels> = OnceLock::new();
        *CHOSEN.get_or_init(|| {
            let (kernels, unheard) = Kernels::of(&features(), std::env::var(KERNELS_VAR).ok().as_deref());
            if let Some(why) = unheard {
                eprintln!("{why}; taking {}", kernels.describe());
            }
            kernels
        })
    }

    pub fn describe(self) -> &'static str {
        match self {
            Kernels::Avx512 => "gemm AVX-512 (x86-v4) microkernels",
            Kernels::Avx2 { forced: false } => "gemm AVX2 + FMA microkernels",
            Kernels::Avx2 { forced: true } => "gemm AVX2 + FMA microkernels (ARBOR_KERNELS=avx2; the processor has AVX-512)",
            Kernels::Portable => "gemm portable microkernels",
        }
    }
}

/// One line: model, extensions, kernel path and the threads the products may use.
pub fn describe() -> String {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("processor: {}; SIMD: {}; kernels: {}; {threads} hardware threads", model(), features().join(" "), Kernels::chosen().describe())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_path_follows_the_features_and_the_variable() {
        let zen4 = ["avx2", "fma", "avx512f"];
        assert_eq!(Kernels::of(&zen4, None), (Kernels::Avx512, None));
        assert_eq!(Kernels::of(&zen4, Some("AVX2")), (Kernels::Avx2 { forced: true }, None));
        assert_eq!(Kernels::of(&zen4, Some("auto")), (Kernels::Avx512, None));
        assert_eq!(Kernels::of(&["avx2", "fma"], Some("avx2")), (Kernels::Avx2 { forced: false }, None));
        let (path, why) = Kernels::of(&["sse4.2"], Some("avx2"));
        assert!(path == Kernels::Portable && why.unwrap().contains("lacks AVX2"));
        let (path, why) = Kernels::of(&zen4, Some("avx1024"));
        assert!(path == Kernels::Avx512 && why.unwrap().contains("not a path"));
        assert_eq!(Kernels::Avx512.describe(), "gemm AVX-512 (x86-v4) microkernels");
        let line = describe();
        assert!(line.starts_with("processor: ") && line.contains("kernels: gemm"), "{line}");
    }
}
