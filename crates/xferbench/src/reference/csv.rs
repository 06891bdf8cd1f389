//! A reader for the embedded reference CSVs (RFC 4180, CRLF line ends). Today
//! no field is quoted, but quotes are honoured anyway: a later revision with a
//! comma inside a field must not shift every column after it.

/// A parsed CSV: header names and rows of fields, as text.
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// Parses embedded data. Panics on a ragged row: the files are compiled
    /// in, so a bad one is a build mistake that the unit tests catch.
    pub fn parse(what: &str, text: &str) -> Table {
        let mut records = records(text).into_iter();
        let header = records.next().unwrap_or_default();
        let rows: Vec<Vec<String>> = records.collect();
        for (i, r) in rows.iter().enumerate() {
            assert_eq!(r.len(), header.len(), "{what}: row {} is ragged", i + 2);
        }
        Table { header, rows }
    }

    /// The field of `row` under column `name` (which must exist).
    pub fn get<'a>(&self, row: &'a [String], name: &str) -> &'a str {
        let c = self
            .header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name} in {:?}", self.header));
        &row[c]
    }
}

/// Splits `text` into records of fields; blank lines are skipped.
fn records(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rec = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    let mut end_record = |rec: &mut Vec<String>, field: &mut String| {
        rec.push(std::mem::take(field));
        let r = std::mem::take(rec);
        if r.len() > 1 || !r[0].is_empty() {
            out.push(r);
        }
    };
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => rec.push(std::mem::take(&mut field)),
            (false, '\r') if chars.peek() == Some(&'\n') => {}
            (false, '\n') => end_record(&mut rec, &mut field),
            (false, c) => field.push(c),
        }
    }
    end_record(&mut rec, &mut field);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_crlf_and_quotes() {
        let t = Table::parse(
            "t",
            "a,b,c\r\n1,\"x, \"\"y\"\"\",\r\n\r\n2,\"multi\nline\",z",
        );
        assert_eq!(t.header, ["a", "b", "c"]);
        assert_eq!(t.rows[0], ["1", "x, \"y\"", ""]);
        assert_eq!(t.rows[1], ["2", "multi\nline", "z"]);
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.get(&t.rows[1], "c"), "z");
    }

    #[test]
    #[should_panic(expected = "ragged")]
    fn ragged_rows_are_refused() {
        Table::parse("t", "a,b\n1\n");
    }
}
