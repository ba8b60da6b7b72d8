//! Without feature `cuda` this does nothing (no CUDA toolkit needed). With it,
//! it compiles cuda/**/*.cu with nvcc through `cc`, the cxx bridge with the
//! host compiler, and links the CUDA runtime statically.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "cuda")]
    cuda::build();
}

#[cfg(feature = "cuda")]
mod cuda {
    use std::env;
    use std::path::{Path, PathBuf};

    /// Machine code for Hopper (sm_90), plus compute_90 PTX that newer GPUs
    /// JIT-compile. One machine-code target only: each costs a full ptxas
    /// pass over the MSM's point arithmetic (minutes on a small machine).
    const GENCODE: [&str; 2] = [
        "arch=compute_90,code=sm_90",
        "arch=compute_90,code=compute_90",
    ];

    pub fn build() {
        let crate_dir =
            PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
        for watched in ["cuda", "include", "src/bridge.rs"] {
            println!(
                "cargo:rerun-if-changed={}",
                crate_dir.join(watched).display()
            );
        }
        println!("cargo:rerun-if-env-changed=CUDA_PATH");
        println!("cargo:rerun-if-env-changed=CUDA_HOME");

        let cuda_root = find_cuda_root(&crate_dir);
        let nvcc = cuda_root.join("bin").join("nvcc");
        let cuda_include = cuda_root.join("include");
        let crate_include = crate_dir.join("include");

        // The bridge's C++ side: host compiler, CUDA headers on the path.
        cxx_build::bridge("src/bridge.rs")
            .include(&crate_include)
            .include(&cuda_include)
            .std("c++17")
            .opt_level(3)
            .compile("groth16_gpu_bridge");

        let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
        let cuda_dir = crate_dir.join("cuda");
        let sources = cuda_sources(&cuda_dir);
        let libraries: Vec<String> = sources
            .iter()
            .map(|source| library_name(&cuda_dir, source))
            .collect();
        // One nvcc per file, all at once: ptxas dominates and is single-threaded.
        std::thread::scope(|scope| {
            for (source, library) in sources.iter().zip(&libraries) {
                let (nvcc, include, out_dir) = (&nvcc, &crate_include, &out_dir);
                scope.spawn(move || compile_cuda_library(nvcc, include, source, out_dir, library));
            }
        });
        println!("cargo:rustc-link-search=native={}", out_dir.display());
        for library in &libraries {
            println!("cargo:rustc-link-lib=static={library}");
        }

        println!(
            "cargo:rustc-link-search=native={}",
            cuda_root.join("lib64").display()
        );
        println!("cargo:rustc-link-lib=static=cudart_static");
        for system_lib in ["dl", "rt", "pthread", "stdc++"] {
            println!("cargo:rustc-link-lib=dylib={system_lib}");
        }
    }

    /// The CUDA root: $CUDA_PATH, $CUDA_HOME, <crate>/.cuda/root (made by
    /// scripts/install-cuda.sh), then the parent of the `nvcc` on PATH.
    fn find_cuda_root(crate_dir: &Path) -> PathBuf {
        // A root named explicitly must hold nvcc: silently using another
        // toolkit would hide the mistake.
        for var in ["CUDA_PATH", "CUDA_HOME"] {
            if let Some(root) = env::var_os(var).filter(|value| !value.is_empty()) {
                let root = PathBuf::from(root);
                if !root.join("bin").join("nvcc").is_file() {
                    panic!(
                        "{var}={} has no bin/nvcc: point it at a CUDA root or unset it and run \
                         `bash scripts/install-cuda.sh`",
                        root.display()
                    );
                }
                return root;
            }
        }
        let installed = std::iter::once(crate_dir.join(".cuda").join("root"));
        let on_path = env::var_os("PATH")
            .into_iter()
            .flat_map(|path| env::split_paths(&path).collect::<Vec<_>>())
            .filter(|dir| dir.join("nvcc").is_file())
            .filter_map(|bin| bin.parent().map(Path::to_path_buf));

        installed
            .chain(on_path)
            .find(|root| root.join("bin").join("nvcc").is_file())
            .unwrap_or_else(|| {
                panic!(
                    "feature `cuda` needs the CUDA toolkit, and no nvcc was found in $CUDA_PATH, \
                     $CUDA_HOME, {}/.cuda/root or on PATH: run `bash scripts/install-cuda.sh` \
                     (installs a pinned nvcc from PyPI) or set CUDA_PATH to a CUDA root",
                    crate_dir.display()
                )
            })
    }

    /// cuda/msm/msm_g1.cu -> groth16_gpu_cuda_msm_msm_g1: unique across folders.
    fn library_name(cuda_dir: &Path, source: &Path) -> String {
        let stem = source
            .strip_prefix(cuda_dir)
            .expect("sources lie under cuda/")
            .with_extension("")
            .to_str()
            .expect("cuda/ file names are UTF-8")
            .replace(['/', '\\'], "_");
        format!("groth16_gpu_cuda_{stem}")
    }

    /// Compiles one .cu file into its own static library through `cc`
    /// (whole-program device code: nothing here needs relocatable device
    /// code). The nvcc is the one found above, named with
    /// `Build::compiler`; `cc`'s default flags are off, since they are the
    /// host compiler's: -O3 and no -G in every profile (device debug code is
    /// far slower), -fPIC through -Xcompiler.
    ///
    /// Skipped when the archive is newer than the source and every header
    /// nvcc listed for it last time, with the same flags: a change to one .cu
    /// file then costs one nvcc run, not all of them (ptxas takes minutes
    /// over the MSM's point arithmetic). `cc` always recompiles, so this
    /// check stays here.
    fn compile_cuda_library(
        nvcc: &Path,
        include: &Path,
        source: &Path,
        out_dir: &Path,
        library: &str,
    ) {
        let archive = out_dir.join(format!("lib{library}.a"));
        let depfile = out_dir.join(format!("{library}.d"));
        let cmdfile = out_dir.join(format!("{library}.cmd"));
        let mut flags: Vec<String> = ["-std=c++17", "-O3", "-Xcompiler", "-fPIC"]
            .map(String::from)
            .to_vec();
        for gencode in GENCODE {
            flags.extend(["-gencode".into(), gencode.into()]);
        }
        let fingerprint = format!(
            "{} {flags:?} -I {} {}",
            nvcc.display(),
            include.display(),
            source.display()
        );
        if is_up_to_date(&archive, &depfile, &cmdfile, &fingerprint) {
            return;
        }
        let mut build = cc::Build::new();
        build
            .cuda(true)
            // cudart_static is linked once, from the root found above.
            .cudart("none")
            .debug(false)
            .compiler(nvcc)
            .no_default_flags(true)
            .warnings(false)
            .extra_warnings(false)
            .cargo_metadata(false)
            .out_dir(out_dir)
            .include(include)
            .file(source);
        for flag in &flags {
            build.flag(flag);
        }
        build
            .flag("-MD")
            .flag("-MF")
            .flag(depfile.to_str().expect("OUT_DIR is UTF-8"));
        if let Err(error) = build.try_compile(library) {
            panic!("nvcc failed on {}: {error}", source.display());
        }
        std::fs::write(&cmdfile, fingerprint)
            .unwrap_or_else(|error| panic!("cannot write {}: {error}", cmdfile.display()));
    }

    /// Whether `archive` was built by `fingerprint` and is newer than every
    /// file in the make-style dependency list `depfile`.
    fn is_up_to_date(archive: &Path, depfile: &Path, cmdfile: &Path, fingerprint: &str) -> bool {
        let modified = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
        let (Some(built), Ok(deps), Ok(previous)) = (
            modified(archive),
            std::fs::read_to_string(depfile),
            std::fs::read_to_string(cmdfile),
        ) else {
            return false;
        };
        previous == fingerprint
            && deps
                .split_whitespace()
                .filter(|token| !token.ends_with(':') && *token != "\\")
                .all(|dep| modified(Path::new(dep)).is_some_and(|time| time <= built))
    }

    /// Every .cu file under `dir`, subfolders included (cuda/msm/, ...),
    /// sorted so builds are reproducible.
    fn cuda_sources(dir: &Path) -> Vec<PathBuf> {
        let mut sources = Vec::new();
        for entry in std::fs::read_dir(dir)
            .unwrap_or_else(|error| panic!("cannot read {}: {error}", dir.display()))
        {
            let path = entry.expect("cuda/ entry is readable").path();
            if path.is_dir() {
                sources.extend(cuda_sources(&path));
            } else if path.extension().is_some_and(|ext| ext == "cu") {
                sources.push(path);
            }
        }
        sources.sort();
        sources
    }
}
