//! Rebuilds the embedded migrations when a migration changes, and hands the test harness a
//! hash of them so a template database is never reused across different schemas.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files = Vec::new();
    collect(&dir, &mut files);
    files.sort();
    let mut hasher = DefaultHasher::new();
    for file in files {
        println!("cargo:rerun-if-changed={}", file.display());
        file.strip_prefix(&dir).unwrap_or(&file).hash(&mut hasher);
        std::fs::read(&file).unwrap_or_default().hash(&mut hasher);
    }
    println!("cargo:rustc-env=MIGRATIONS_HASH={:016x}", hasher.finish());
}

fn collect(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            println!("cargo:rerun-if-changed={}", path.display());
            collect(&path, out);
        } else {
            out.push(path);
        }
    }
}
