# Package metadata from the workspace's Cargo.toml, for the packaging scripts
# (sourced; needs ROOT). `cargo_field KEY` prints the string value of KEY from the
# [workspace.package] table, or from [package] where a package sets it itself.
cargo_field() {
    awk -v key="$1" '
        /^[ \t]*\[/ { sec = $0; gsub(/[ \t]/, "", sec); next }
        (sec == "[package]" || sec == "[workspace.package]") && $0 ~ "^[ \t]*" key "[ \t]*=[ \t]*\"" {
            sub(/^[^"]*"/, ""); sub(/"[ \t]*(#.*)?$/, ""); print; exit
        }' "$ROOT/Cargo.toml"
}
