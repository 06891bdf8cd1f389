//! fio's `file_service_type=` as a job sets it: the model's part; choosing
//! the files is `files`'.

/// fio's `file_service_type=`: how the next file is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Service {
    /// The next file in order (fio's default).
    RoundRobin,
    /// One file until its pass is done, then the next.
    Sequential,
    /// A file drawn uniformly from those not done.
    Random,
}

/// `file_service_type=KIND[:N]`: the kind, and the I/Os issued to a file
/// before another is chosen (N, default 1; `sequential` ignores it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FileService {
    pub kind: Service,
    pub per: u32,
}

impl Default for FileService {
    fn default() -> Self {
        FileService {
            kind: Service::RoundRobin,
            per: 1,
        }
    }
}

impl FileService {
    /// Parses fio's `file_service_type=` value; the error is the reason alone.
    pub fn parse(v: &str) -> Result<FileService, String> {
        let (kind, n) = match v.split_once(':') {
            Some((k, n)) => (k.trim(), Some(n.trim())),
            None => (v.trim(), None),
        };
        let kind = match kind {
            "roundrobin" => Service::RoundRobin,
            "sequential" => Service::Sequential,
            "random" => Service::Random,
            "zipf" | "pareto" | "normal" | "gauss" => {
                return Err(format!(
                    "choosing files by a {kind} distribution is not supported yet; use random, roundrobin or sequential"
                ));
            }
            _ => {
                return Err(
                    "unknown file service type; use roundrobin, sequential or random, optionally with :N (I/Os per file before switching)".into(),
                );
            }
        };
        let per = match n {
            None => 1,
            Some(n) => n.parse::<u32>().ok().filter(|&n| n > 0).ok_or_else(|| {
                "after ':' give the I/Os issued to a file before switching, a whole number from 1, as in roundrobin:8".to_string()
            })?,
        };
        Ok(FileService { kind, per })
    }

    /// fio's spelling, for the report.
    pub fn text(&self) -> String {
        let kind = match self.kind {
            Service::RoundRobin => "roundrobin",
            Service::Sequential => "sequential",
            Service::Random => "random",
        };
        if self.per > 1 && self.kind != Service::Sequential {
            format!("{kind}:{}", self.per)
        } else {
            kind.to_string()
        }
    }
}
