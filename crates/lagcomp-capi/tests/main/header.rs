//! The committed header is what cbindgen makes of the crate now.

use std::path::Path;

#[test]
fn committed_header_matches_the_code() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config =
        cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml parses");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen reads the crate")
        .write(&mut generated);
    let path = crate_dir.join("include/lagcomp.h");
    if std::env::var_os("LAGCOMP_BLESS_HEADER").is_some() {
        std::fs::write(&path, &generated).expect("write the header");
        return;
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "include/lagcomp.h is out of date with the code: run \
         `LAGCOMP_BLESS_HEADER=1 cargo test -p lagcomp-capi --test main header` and commit it"
    );
}
