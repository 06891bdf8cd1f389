fn main() {
    std::process::exit(xferbench::main());
}
