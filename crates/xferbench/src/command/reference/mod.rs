//! `xferbench reference list|show`: the published datasets, printed in their
//! source's table shape or as JSON and CSV for other tools.

mod export;
mod show;

use crate::error::Result;
use crate::format::Format;
use crate::reference::{all, find};

/// What `xferbench reference` is asked to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// List the datasets.
    List {
        /// How to print the list.
        format: Format,
    },
    /// Print one dataset, shaped as its source's table.
    Show {
        /// The dataset's name.
        name: String,
        /// How to print it.
        format: Format,
    },
}

/// `xferbench reference list|show`.
pub fn run(action: &Action) -> Result<()> {
    let text = match action {
        Action::List { format } => export::list(&all(), *format)?,
        Action::Show { name, format } => {
            let d = find(name)?;
            match format {
                Format::Table => show::render(&d),
                Format::Json => export::json(&d)?,
                Format::Csv => export::csv(&d),
            }
        }
    };
    crate::output::emit(&text, None)
}
