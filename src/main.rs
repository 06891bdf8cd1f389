//! The `xferbench` command line: arguments (`cli`), then the run (`app`)
//! over the `xferbench` library.

mod app;
mod cli;

fn main() {
    std::process::exit(app::main());
}
