//! Each flag's default as clap takes it (`default_value = X.as_str()`),
//! written from the library configs' `Default`: a default is set once, in
//! its config, and `--help` shows it from there. clap parses these texts
//! with the flags' own parsers, so no flag given yields the config's
//! `Default` again (checked by `defaults_of_the_settings_are_the_command_lines`).
//! Each text is made on first use, as clap builds the command.

use std::sync::LazyLock;
use xferbench::command::serve::ServeConfig;
use xferbench::command::{limits::LimitsOptions, list::ListOptions, plugin_check::CheckOptions};
use xferbench::compare::Settings;
use xferbench::options::{
    Common, CurveConfig, FlowgraphConfig, LoadConfig, MeshConfig, Output, RoundtripConfig,
    StreamConfig,
};
use xferbench::transport::Spec;
use xferbench::units::{format_duration, format_size, format_size_list, format_size_ranges};
use xferbench::words::{Word, join};

/// A default's text, made once.
pub type Shown = LazyLock<String>;

fn specs(v: &[Spec]) -> String {
    let items: Vec<String> = v.iter().map(Spec::to_string).collect();
    items.join(",")
}

/// A fraction as `compare` takes it: `99%`, `5%`.
fn percent(v: f64) -> String {
    // Rounded to a millionth of a percent: 0.99 × 100 is not always 99.
    format!("{}%", (v * 1e8).round() / 1e6)
}

// The flags every link experiment shares (`CommonArgs`, `OutputArgs`).
pub static TRANSPORTS: Shown = LazyLock::new(|| specs(&Common::default().transports));
pub static CPUS: Shown = LazyLock::new(|| Common::default().cpus.to_string());
pub static RESPONDER_DELAY: Shown =
    LazyLock::new(|| format_duration(Common::default().responder_delay));
pub static TIMEOUT: Shown = LazyLock::new(|| format_duration(Common::default().timeout));
pub static STATS: Shown = LazyLock::new(|| join(&Common::default().stats));
pub static FORMAT: Shown = LazyLock::new(|| Output::default().format.word().into());
pub static REPEAT: Shown = LazyLock::new(|| Output::default().repeat.to_string());

// roundtrip
pub static ROUNDTRIP_IN: Shown =
    LazyLock::new(|| format_size_ranges(&RoundtripConfig::default().in_sizes));
pub static ROUNDTRIP_OUT: Shown =
    LazyLock::new(|| format_size_ranges(&RoundtripConfig::default().out_sizes));
pub static ROUNDTRIP_UNIT: Shown = LazyLock::new(|| RoundtripConfig::default().unit.word().into());

// curve
pub static CURVE_SIZES: Shown = LazyLock::new(|| format_size_ranges(&CurveConfig::default().sizes));
pub static CURVE_PERTURB: Shown = LazyLock::new(|| CurveConfig::default().perturb.to_string());
pub static CURVE_MODE: Shown = LazyLock::new(|| CurveConfig::default().mode.word().into());
pub static CURVE_WINDOW: Shown = LazyLock::new(|| CurveConfig::default().window.to_string());
pub static CURVE_DIRECTION: Shown = LazyLock::new(|| join(&CurveConfig::default().direction));
pub static CURVE_PAYLOAD: Shown = LazyLock::new(|| CurveConfig::default().payload.word().into());
pub static CURVE_CHUNK: Shown = LazyLock::new(|| CurveConfig::default().chunk.name());
pub static CURVE_BREAKPOINT: Shown = LazyLock::new(|| CurveConfig::default().breakpoint.name());

// mesh
pub static MESH_TRANSPORT: Shown = LazyLock::new(|| MeshConfig::default().transport);
pub static MESH_LATENCY_SIZE: Shown =
    LazyLock::new(|| format_size(MeshConfig::default().latency_size));
pub static MESH_BANDWIDTH_SIZE: Shown =
    LazyLock::new(|| format_size(MeshConfig::default().bandwidth_size));
pub static MESH_WINDOW: Shown = LazyLock::new(|| MeshConfig::default().window.to_string());
pub static MESH_DURATION: Shown = LazyLock::new(|| format_duration(MeshConfig::default().duration));
pub static MESH_TIMEOUT: Shown = LazyLock::new(|| format_duration(MeshConfig::default().timeout));

// load: its sizes item by item, as rk11perf's disk blocks are listed.
pub static LOAD_SIZES: Shown = LazyLock::new(|| format_size_list(&LoadConfig::default().sizes));
pub static LOAD_LOADS: Shown = LazyLock::new(|| join(&LoadConfig::default().loads));
pub static LOAD_DIRECTION: Shown = LazyLock::new(|| join(&LoadConfig::default().direction));
pub static LOAD_INFLIGHT: Shown = LazyLock::new(|| LoadConfig::default().inflight.to_string());
pub static LOAD_CELL_TIME: Shown =
    LazyLock::new(|| format_duration(LoadConfig::default().cell_time));
pub static LOAD_ARRIVAL: Shown = LazyLock::new(|| LoadConfig::default().arrival.word().into());

// flowgraph
pub static FLOW_EDGES: Shown = LazyLock::new(|| join(&FlowgraphConfig::default().edges));
pub static FLOW_BUFFER_SIZE: Shown =
    LazyLock::new(|| format_size(FlowgraphConfig::default().buffer_size));
pub static FLOW_BUFFERS: Shown = LazyLock::new(|| FlowgraphConfig::default().buffers);
pub static FLOW_EDGE_BUFFERS: Shown = LazyLock::new(|| FlowgraphConfig::default().edge_buffers);
pub static FLOW_DURATION: Shown =
    LazyLock::new(|| format_duration(FlowgraphConfig::default().duration));
pub static FLOW_WARMUP: Shown =
    LazyLock::new(|| format_duration(FlowgraphConfig::default().warmup));
pub static FLOW_ROUNDS: Shown = LazyLock::new(|| FlowgraphConfig::default().rounds.to_string());
pub static FLOW_CPUS: Shown = LazyLock::new(|| FlowgraphConfig::default().cpus.to_string());
pub static FLOW_KERNEL_SIZES: Shown =
    LazyLock::new(|| format_size_ranges(&FlowgraphConfig::default().kernel_sizes));
pub static FLOW_KERNEL: Shown = LazyLock::new(|| FlowgraphConfig::default().kernel);
pub static FLOW_TIMEOUT: Shown =
    LazyLock::new(|| format_duration(FlowgraphConfig::default().timeout));

// stream
pub static STREAM_TIMEOUT: Shown =
    LazyLock::new(|| format_duration(StreamConfig::default().timeout));
pub static STREAM_FORMAT: Shown =
    LazyLock::new(|| StreamConfig::default().out.format.word().into());

// list, limits, plugin check, serve, compare
pub static LIST_FORMAT: Shown = LazyLock::new(|| ListOptions::default().format.word().into());
pub static LIST_TIMEOUT: Shown = LazyLock::new(|| format_duration(ListOptions::default().timeout));
pub static LIMITS_FORMAT: Shown = LazyLock::new(|| LimitsOptions::default().format.word().into());
pub static CHECK_TIMEOUT: Shown =
    LazyLock::new(|| format_duration(CheckOptions::default().timeout));
pub static CHECK_FORMAT: Shown = LazyLock::new(|| CheckOptions::default().format.word().into());
pub static SERVE_LISTEN: Shown = LazyLock::new(|| ServeConfig::default().listen);
pub static SERVE_MAX_MESSAGE: Shown =
    LazyLock::new(|| format_size(ServeConfig::default().max_message));
pub static SERVE_MAX_SESSIONS: Shown =
    LazyLock::new(|| ServeConfig::default().max_sessions.to_string());
pub static SERVE_IDLE_TIMEOUT: Shown =
    LazyLock::new(|| format_duration(ServeConfig::default().idle_timeout));
pub static COMPARE_CONFIDENCE: Shown = LazyLock::new(|| percent(Settings::default().confidence));
pub static COMPARE_NOISE: Shown = LazyLock::new(|| percent(Settings::default().noise));

#[cfg(test)]
mod tests {
    #[test]
    fn fractions_are_shown_as_the_percentages_typed() {
        assert_eq!(super::percent(0.99), "99%");
        assert_eq!(super::percent(0.05), "5%");
        assert_eq!(super::percent(0.955), "95.5%");
    }
}
