//! Figures drawn as SVG with plotters. Text is written as SVG `<text>` (no
//! font files needed at build or run time), so the browser lays it out with
//! its own sans-serif font. The legend sits in its own column right of the
//! plot, so it never hides a point.

use super::figure::{Axis, Figure, Heatmap, Lines, Plot, Role, Scale};
use crate::error::{Error, Result};
use plotters::coord::Shift;
use plotters::coord::ranged1d::SegmentValue;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Width and height in px: readable as is on an 800 px wide page.
pub const WIDTH: u32 = 800;
pub const HEIGHT: u32 = 480;

/// Tableau 10: distinct at a glance and for the common colour-blindnesses.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];
const GREY: RGBColor = RGBColor(150, 150, 150);
const FONT: &str = "sans-serif";
// plotters writes SVG font sizes as points / 1.24: these give 17, 13.7 and
// 12 px text.
const TITLE_PT: f64 = 21.0;
const AXIS_PT: f64 = 17.0;
const LABEL_PT: f64 = 15.0;

/// Ticks at powers of a base a reader of that axis expects: 2 or 4 for
/// bytes (4k, 64k, 1M), 10 otherwise.
fn log_base(axis: &Axis, lo: f64, hi: f64) -> f64 {
    match axis.scale {
        Scale::Bytes if hi / lo > 4096.0 => 4.0,
        Scale::Bytes => 2.0,
        _ => 10.0,
    }
}

fn fail<E: std::fmt::Debug>(what: &str) -> impl FnOnce(E) -> Error + '_ {
    move |e| Error::run(format!("drawing {what}: {e:?}"))
}

/// Renders the figure as a standalone SVG document.
pub fn render(fig: &Figure) -> Result<String> {
    let mut buf = String::new();
    let height = match &fig.plot {
        Plot::Lines(l) => HEIGHT + legend_height(l),
        Plot::Heatmap(_) => HEIGHT,
    };
    {
        let root = SVGBackend::with_string(&mut buf, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(fail(&fig.title))?;
        match &fig.plot {
            Plot::Lines(l) => lines(&root, &fig.title, l)?,
            Plot::Heatmap(h) => heatmap(&root, &fig.title, h)?,
        }
        root.present().map_err(fail(&fig.title))?;
    }
    Ok(buf)
}

/// The colour of series `i`: a model takes the colour of what it models;
/// references follow the measured series in the palette.
fn colour(l: &Lines, i: usize) -> RGBColor {
    let s = &l.series[i];
    match s.role {
        Role::Bound => GREY,
        Role::Model => s.of.map_or(GREY, |j| colour(l, j)),
        Role::Measured if s.of.is_some() => s.of.map_or(GREY, |j| colour(l, j)),
        Role::Measured | Role::Reference => {
            let k = l.series[..i]
                .iter()
                .filter(|p| matches!(p.role, Role::Measured | Role::Reference) && p.of.is_none())
                .count();
            PALETTE[k % PALETTE.len()]
        }
    }
}

/// A series' line: solid for what was measured here, dotted for a measured
/// variant, dashed (longer) for references, models and bounds.
fn dash(s: &super::figure::Series) -> Option<(u32, u32)> {
    match s.role {
        Role::Measured if s.of.is_some() => Some((2, 3)),
        Role::Measured => None,
        Role::Reference => Some((6, 4)),
        Role::Model | Role::Bound => Some((8, 5)),
    }
}

/// The span of the data along one axis, padded; a log axis keeps only
/// positive values.
fn span(vals: impl Iterator<Item = f64>, axis: &Axis, from_zero: bool) -> (f64, f64) {
    let v: Vec<f64> = vals
        .filter(|v| v.is_finite() && (!axis.log || *v > 0.0))
        .collect();
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() {
        return if axis.log { (1.0, 10.0) } else { (0.0, 1.0) };
    }
    if axis.log {
        let (lo, hi) = if hi / lo < 10.0 {
            let mid = (lo * hi).sqrt();
            (mid / 4.0, mid * 4.0)
        } else {
            (lo, hi)
        };
        (lo / 1.3, hi * 1.3)
    } else {
        let lo = if from_zero { lo.min(0.0) } else { lo };
        let pad = ((hi - lo) * 0.05).max(hi.abs() * 0.05).max(1e-9);
        (if from_zero { lo } else { lo - pad }, hi + pad)
    }
}

const LEGEND_ROW: u32 = 22;

/// Legend columns: two when the longest name fits in half the width.
fn legend_columns(l: &Lines) -> u32 {
    let chars = l
        .series
        .iter()
        .map(|s| s.name.chars().count())
        .max()
        .unwrap_or(0) as u32;
    if chars * 7 + 44 <= WIDTH / 2 { 2 } else { 1 }
}

fn legend_height(l: &Lines) -> u32 {
    let n = l.series.len() as u32;
    n.div_ceil(legend_columns(l)) * LEGEND_ROW + 8
}

fn lines(root: &DrawingArea<SVGBackend, Shift>, title: &str, l: &Lines) -> Result<()> {
    let (plot_area, legend_area) = root.split_vertically(HEIGHT);
    let xs = l.series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let ys = l.series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let (x0, x1) = span(xs, &l.x, false);
    let (y0, y1) = span(ys, &l.y, true);
    let mut b = ChartBuilder::on(&plot_area);
    b.caption(title, (FONT, TITLE_PT))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64);
    let fx = |v: &f64| l.x.tick(*v);
    let fy = |v: &f64| l.y.tick(*v);
    // Four axis kinds: plotters types a log axis apart from a linear one.
    macro_rules! draw {
        ($xr:expr, $yr:expr) => {{
            let mut chart = b.build_cartesian_2d($xr, $yr).map_err(fail(title))?;
            chart
                .configure_mesh()
                .x_labels(if l.x.log { 12 } else { 10 })
                .y_labels(if l.y.log { 6 } else { 8 })
                .x_desc(l.x.label.as_str())
                .y_desc(l.y.label.as_str())
                .x_label_formatter(&fx)
                .y_label_formatter(&fy)
                .axis_desc_style((FONT, AXIS_PT))
                .label_style((FONT, LABEL_PT))
                .max_light_lines(0)
                .bold_line_style(RGBColor(225, 225, 225))
                .draw()
                .map_err(fail(title))?;
            for (i, s) in l.series.iter().enumerate() {
                let c = colour(l, i);
                let pts: Vec<(f64, f64)> = s
                    .points
                    .iter()
                    .copied()
                    .filter(|&(x, y)| {
                        x.is_finite()
                            && y.is_finite()
                            && (!l.x.log || x > 0.0)
                            && (!l.y.log || y > 0.0)
                    })
                    .collect();
                let line = c.stroke_width(2);
                match dash(s) {
                    Some((on, off)) => chart
                        .draw_series(DashedLineSeries::new(pts.clone(), on, off, line))
                        .map(|_| ()),
                    None => chart
                        .draw_series(LineSeries::new(pts.clone(), line))
                        .map(|_| ()),
                }
                .map_err(fail(title))?;
                match s.role {
                    Role::Measured if s.of.is_some() => chart
                        .draw_series(pts.iter().map(|&p| {
                            EmptyElement::at(p) + Rectangle::new([(-3, -3), (3, 3)], c.filled())
                        }))
                        .map(|_| ()),
                    Role::Measured => chart
                        .draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))
                        .map(|_| ()),
                    Role::Reference => chart
                        .draw_series(pts.iter().map(|&p| TriangleMarker::new(p, 5, line)))
                        .map(|_| ()),
                    Role::Model | Role::Bound => Ok(()),
                }
                .map_err(fail(title))?;
            }
        }};
    }
    let (bx, by) = (log_base(&l.x, x0, x1), log_base(&l.y, y0, y1));
    match (l.x.log, l.y.log) {
        (true, true) => draw!((x0..x1).log_scale().base(bx), (y0..y1).log_scale().base(by)),
        (true, false) => draw!((x0..x1).log_scale().base(bx), y0..y1),
        (false, true) => draw!(x0..x1, (y0..y1).log_scale().base(by)),
        (false, false) => draw!(x0..x1, y0..y1),
    }
    legend(&legend_area, l)
}

/// A key per series under the plot, in one or two columns: a line sample in
/// the series' style and its name.
fn legend(area: &DrawingArea<SVGBackend, Shift>, l: &Lines) -> Result<()> {
    let text = TextStyle::from((FONT, LABEL_PT)).color(&BLACK);
    let cols = legend_columns(l) as usize;
    // Each model or variant right after the series it belongs to.
    let mut order: Vec<usize> = Vec::new();
    for (i, s) in l.series.iter().enumerate() {
        if s.of.is_none() {
            order.push(i);
            order.extend((0..l.series.len()).filter(|&j| l.series[j].of == Some(i)));
        }
    }
    for (k, &i) in order.iter().enumerate() {
        let s = &l.series[i];
        let (col, row) = (k % cols, k / cols);
        let x = 70 + col as i32 * (WIDTH / 2) as i32;
        let y = (row as u32 * LEGEND_ROW + LEGEND_ROW / 2) as i32;
        let c = colour(l, i);
        let style = c.stroke_width(2);
        let sample = vec![(x, y), (x + 24, y)];
        let r = match dash(s) {
            Some((on, off)) => area.draw(&DashedPathElement::new(sample, on, off, style)),
            None => area.draw(&PathElement::new(sample, style)),
        }
        .and_then(|_| match s.role {
            Role::Measured if s.of.is_some() => area.draw(&Rectangle::new(
                [(x + 9, y - 3), (x + 15, y + 3)],
                c.filled(),
            )),
            Role::Measured => area.draw(&Circle::new((x + 12, y), 3, c.filled())),
            Role::Reference => area.draw(&TriangleMarker::new((x + 12, y), 5, style)),
            Role::Model | Role::Bound => Ok(()),
        });
        r.map_err(fail("legend"))?;
        area.draw(&Text::new(
            s.name.clone(),
            (x + 30, y),
            text.pos(Pos::new(HPos::Left, VPos::Center)),
        ))
        .map_err(fail("legend"))?;
    }
    Ok(())
}

/// Cell colour: light (fast) to dark red (slow), on a log scale from the
/// smallest value over at least a factor of 4, so a 15% spread stays pale
/// rather than running the whole scale.
fn heat(v: f64, lo: f64, hi: f64) -> RGBColor {
    let hi = hi.max(lo * 4.0);
    const STOPS: [(u8, u8, u8); 5] = [
        (255, 255, 204),
        (254, 217, 118),
        (253, 141, 60),
        (227, 26, 28),
        (128, 0, 38),
    ];
    let t = if hi > lo && lo > 0.0 && v > 0.0 {
        ((v / lo).ln() / (hi / lo).ln()).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let f = t * (STOPS.len() - 1) as f64;
    let i = (f.floor() as usize).min(STOPS.len() - 2);
    let w = f - i as f64;
    let mix = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * w).round() as u8;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Ratio colour: white at 1, blue below (faster than the reference), red
/// above, full at a factor of 16 either way.
fn diverging(v: f64) -> RGBColor {
    let t = if v > 0.0 {
        (v.ln() / 16f64.ln()).clamp(-1.0, 1.0)
    } else {
        0.0
    };
    let to = if t < 0.0 {
        (33.0, 102.0, 172.0)
    } else {
        (178.0, 24.0, 43.0)
    };
    let w = t.abs();
    let mix = |c: f64| (255.0 + (c - 255.0) * w).round() as u8;
    RGBColor(mix(to.0), mix(to.1), mix(to.2))
}

fn heatmap(root: &DrawingArea<SVGBackend, Shift>, title: &str, h: &Heatmap) -> Result<()> {
    let (nx, ny) = (h.xs.len() as u32, h.ys.len() as u32);
    let vals: Vec<f64> = h.cells.iter().flatten().flatten().copied().collect();
    let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut chart = ChartBuilder::on(root)
        .caption(title, (FONT, TITLE_PT))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(64)
        // An integer range a..b is split into the b - a + 1 segments a..=b.
        .build_cartesian_2d(
            (0..nx.max(1) - 1).into_segmented(),
            (0..ny.max(1) - 1).into_segmented(),
        )
        .map_err(fail(title))?;
    // Row 0 at the top, as in the tables.
    let row_of = |j: u32| ny - 1 - j;
    let fx = |v: &SegmentValue<u32>| match v {
        SegmentValue::CenterOf(i) => {
            h.xs.get(*i as usize)
                .map_or(String::new(), |&x| h.x.format(x))
        }
        _ => String::new(),
    };
    let fy = |v: &SegmentValue<u32>| match v {
        SegmentValue::CenterOf(j) if *j < ny => {
            h.ys.get(row_of(*j) as usize)
                .map_or(String::new(), |&y| h.y.format(y))
        }
        _ => String::new(),
    };
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc(h.x.label.as_str())
        .y_desc(h.y.label.as_str())
        .x_labels(nx as usize + 1)
        .y_labels(ny as usize + 1)
        .x_label_formatter(&fx)
        .y_label_formatter(&fy)
        .axis_desc_style((FONT, AXIS_PT))
        .label_style((FONT, LABEL_PT))
        .draw()
        .map_err(fail(title))?;
    let size = match nx.max(ny) {
        n if n > 12 => 11.0,
        n if n > 8 => 14.0,
        _ => 17.0,
    };
    for (r, row) in h.cells.iter().enumerate() {
        let j = row_of(r as u32);
        for (i, cell) in row.iter().enumerate() {
            let i = i as u32;
            let Some(v) = *cell else { continue };
            let c = if h.ratio {
                diverging(v)
            } else {
                heat(v, lo, hi)
            };
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [
                        (SegmentValue::Exact(i), SegmentValue::Exact(j)),
                        (SegmentValue::Exact(i + 1), SegmentValue::Exact(j + 1)),
                    ],
                    c.filled(),
                )))
                .map_err(fail(title))?;
            let luminance = 0.299 * c.0 as f64 + 0.587 * c.1 as f64 + 0.114 * c.2 as f64;
            let ink = if luminance < 140.0 { WHITE } else { BLACK };
            chart
                .draw_series(std::iter::once(Text::new(
                    super::figure::si(v),
                    (SegmentValue::CenterOf(i), SegmentValue::CenterOf(j)),
                    TextStyle::from((FONT, size))
                        .color(&ink)
                        .pos(Pos::new(HPos::Center, VPos::Center)),
                )))
                .map_err(fail(title))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variant_wears_its_twins_colour_and_takes_no_palette_slot() {
        let m =
            |name: &str| super::super::figure::Series::new(name, Role::Measured, vec![(1.0, 1.0)]);
        let mut v = m("static+handoff");
        v.of = Some(0);
        let l = Lines {
            x: Axis::new("x", false, super::super::figure::Scale::Count),
            y: Axis::new("y", true, super::super::figure::Scale::Number),
            series: vec![m("static"), v, m("ring")],
        };
        assert_eq!(colour(&l, 1), colour(&l, 0));
        assert_eq!(colour(&l, 2), PALETTE[1]);
        assert!(render_lines_for_test(&l).contains("static+handoff"));
    }

    fn render_lines_for_test(l: &Lines) -> String {
        let mut buf = String::new();
        {
            let root = SVGBackend::with_string(&mut buf, (WIDTH, 600)).into_drawing_area();
            lines(&root, "t", l).unwrap();
            root.present().unwrap();
        }
        buf
    }

    /// The tick labels of an SVG: the text of every `<text>` element.
    fn texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                Some(
                    t.split_once('>')?
                        .1
                        .split_once("</text>")?
                        .0
                        .trim()
                        .to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn log_ticks_of_large_rates_carry_their_si_prefix() {
        // A flowgraph's samples/s span 10⁸..10¹¹: a tick must read "10G",
        // never a bare "10" that leaves the reader to guess the unit.
        let s = super::super::figure::Series::new(
            "static",
            Role::Measured,
            vec![(1.0, 4e10), (2.0, 2e9), (4.0, 3e8)],
        );
        let l = Lines {
            x: Axis::new(
                "saxpy blocks (M)",
                false,
                super::super::figure::Scale::Count,
            ),
            y: Axis::new("samples/s", true, super::super::figure::Scale::Number),
            series: vec![s],
        };
        let t = texts(&render_lines_for_test(&l));
        for want in ["1G", "10G"] {
            assert!(t.iter().any(|x| x == want), "no '{want}' tick in {t:?}");
        }
        for bare in ["10", "100", "1000"] {
            assert!(!t.iter().any(|x| x == bare), "bare tick '{bare}' in {t:?}");
        }
    }

    #[test]
    fn ratio_colours_split_at_one() {
        assert_eq!(diverging(1.0), RGBColor(255, 255, 255));
        assert_eq!(diverging(16.0), RGBColor(178, 24, 43));
        assert_eq!(diverging(1.0 / 16.0), RGBColor(33, 102, 172));
        let pale = heat(1.15, 1.0, 1.15);
        assert!(pale.2 > 100, "a 15% spread stays pale: {pale:?}");
    }

    #[test]
    fn heat_runs_light_to_dark() {
        let light = heat(1.0, 1.0, 100.0);
        let dark = heat(100.0, 1.0, 100.0);
        assert_eq!(light, RGBColor(255, 255, 204));
        assert_eq!(dark, RGBColor(128, 0, 38));
        let mid = heat(10.0, 1.0, 100.0);
        assert!(mid.1 < light.1 && mid.1 > dark.1);
    }

    #[test]
    fn log_span_is_positive_and_covers_the_data() {
        let a = Axis::new("x", true, super::super::figure::Scale::Number);
        let (lo, hi) = span([0.0, 2.0, 2000.0].into_iter(), &a, true);
        assert!(lo > 0.0 && lo < 2.0 && hi > 2000.0);
        let (lo, hi) = span([5.0].into_iter(), &a, true);
        assert!(lo < 5.0 && hi > 5.0);
    }
}
