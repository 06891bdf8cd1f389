fn main() {
    std::process::exit(xferbench::app::main());
}
