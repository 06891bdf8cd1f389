//! Figures drawn as SVG with plotters. Text is written as SVG `<text>` (no
//! font files needed at build or run time), so the browser lays it out with
//! its own sans-serif font. A line plot's legend sits under the plot, so it
//! never hides a point; a heat map is laid out by hand (square cells sized
//! by its rows and columns, labels thinned to stay apart) with its colour
//! scale beside it.

use super::figure::{Axis, Bars, Figure, Heatmap, Lines, Plot, Role, Scale};
use crate::error::{Error, Result};
use crate::units::si;
use plotters::coord::Shift;
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
    match &fig.plot {
        Plot::Lines(l) => draw((WIDTH, HEIGHT + legend_height(l)), &fig.title, |root| {
            lines(root, &fig.title, l, !fig.kind.sampled())
        }),
        Plot::Heatmap(h) => {
            let layout = HeatLayout::of(&fig.title, h);
            draw((layout.width, layout.height), &fig.title, |root| {
                heatmap(root, &fig.title, h, &layout)
            })
        }
        Plot::Bars(b) => draw(bars_size(b), &fig.title, |root| bars(root, &fig.title, b)),
    }
}

/// An SVG of `size` px on white, drawn by `f`.
fn draw(size: (u32, u32), title: &str, f: impl FnOnce(&Area) -> Result<()>) -> Result<String> {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, size).into_drawing_area();
        root.fill(&WHITE).map_err(fail(title))?;
        f(&root)?;
        root.present().map_err(fail(title))?;
    }
    Ok(well_formed(buf))
}

/// The SVG with the characters XML forbids (control characters from a
/// name, the noncharacters U+FFFE and U+FFFF) written as visible escapes:
/// plotters escapes markup, not those, and one of them makes the whole
/// document unreadable to an XML parser.
fn well_formed(svg: String) -> String {
    let svg = super::inert(svg);
    if svg.contains(['\u{fffe}', '\u{ffff}']) {
        svg.replace('\u{fffe}', "\\u{fffe}")
            .replace('\u{ffff}', "\\u{ffff}")
    } else {
        svg
    }
}

/// The colour of series `i`: a model takes the colour of what it models, a
/// baseline the colour of the series read against it; references follow the
/// measured series in the palette.
fn colour(l: &Lines, i: usize) -> RGBColor {
    let s = &l.series[i];
    match s.role {
        Role::Bound => GREY,
        Role::Model => s.of.map_or(GREY, |j| colour(l, j)),
        Role::Measured | Role::Reference if s.of.is_some() => s.of.map_or(GREY, |j| colour(l, j)),
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
/// Error bars of series at the same x stand this many px apart, their caps
/// this many px either side.
const BAR_DODGE: f64 = 5.0;
const BAR_CAP: i32 = 3;

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

/// A line plot with its legend under it; `markers`: a marker on every
/// point (measured points), else lines alone (curves sampled from a
/// distribution).
fn lines(
    root: &DrawingArea<SVGBackend, Shift>,
    title: &str,
    l: &Lines,
    markers: bool,
) -> Result<()> {
    let (plot_area, legend_area) = root.split_vertically(HEIGHT);
    let xs = l.series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let ys = l.series.iter().flat_map(|s| {
        let bars = s.bars.iter().flat_map(|(_, [lo, hi])| [*lo, *hi]);
        s.points.iter().map(|p| p.1).chain(bars)
    });
    let (mut x0, mut x1) = span(xs, &l.x, false);
    let (y0, y1) = span(ys, &l.y, true);
    let mut x_labels = if l.x.log { 12 } else { 10 };
    if l.x.scale == Scale::Nines {
        ((x0, x1), x_labels) = nines_span(l, (x0, x1));
    }
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
                .x_labels(x_labels)
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
                    _ if !markers => Ok(()),
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
            // Error bars, each series' beside the others' at the same x.
            let barred: Vec<usize> = (0..l.series.len())
                .filter(|&i| !l.series[i].bars.is_empty())
                .collect();
            for (k, &i) in barred.iter().enumerate() {
                let dx = ((k as f64 - (barred.len() - 1) as f64 / 2.0) * BAR_DODGE).round() as i32;
                let style = colour(l, i).stroke_width(1);
                let bars: Vec<(f64, f64, f64)> = l.series[i]
                    .bars
                    .iter()
                    .map(|&(x, [lo, hi])| (x, lo, hi))
                    .filter(|&(x, lo, hi)| {
                        x.is_finite()
                            && lo.is_finite()
                            && hi.is_finite()
                            && (!l.x.log || x > 0.0)
                            && (!l.y.log || lo > 0.0)
                    })
                    .collect();
                // An I from low to high, its height in px from the axis.
                let shapes: Vec<_> = bars
                    .iter()
                    .map(|&(x, lo, hi)| {
                        let h = chart.backend_coord(&(x, hi)).1 - chart.backend_coord(&(x, lo)).1;
                        let c = BAR_CAP;
                        EmptyElement::at((x, lo))
                            + PathElement::new(
                                vec![
                                    (dx - c, h),
                                    (dx + c, h),
                                    (dx, h),
                                    (dx, 0),
                                    (dx - c, 0),
                                    (dx + c, 0),
                                ],
                                style,
                            )
                    })
                    .collect();
                chart.draw_series(shapes).map_err(fail(title))?;
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
    legend(&legend_area, l, markers)
}

/// The whole nines (0%, 90%, 99%…) the data reach, none beyond: the x
/// span ends short of the next, and one label per whole nine makes
/// plotters tick each of them.
fn nines_span(l: &Lines, (x0, x1): (f64, f64)) -> ((f64, f64), usize) {
    let top = l
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .filter(|x| x.is_finite())
        .fold(0.0, f64::max);
    let whole = (top + 1e-9).floor();
    ((x0, x1.min(whole + 0.99)), whole as usize + 1)
}

/// A key per series under the plot, in one or two columns: a line sample in
/// the series' style and its name.
fn legend(area: &DrawingArea<SVGBackend, Shift>, l: &Lines, markers: bool) -> Result<()> {
    let text = TextStyle::from((FONT, LABEL_PT)).color(&BLACK);
    let cols = legend_columns(l) as usize;
    // Each model or variant right after the series it belongs to; a
    // baseline right before the series read against it.
    let mut order: Vec<usize> = Vec::new();
    let with = |i: usize, base: bool| {
        (0..l.series.len()).filter(move |&j| {
            l.series[j].of == Some(i) && (l.series[j].role == Role::Reference) == base
        })
    };
    for (i, s) in l.series.iter().enumerate() {
        if s.of.is_none() {
            order.extend(with(i, true));
            order.push(i);
            order.extend(with(i, false));
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
            _ if !markers => Ok(()),
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

/// Width given to each bar of a stacked bar chart, its label included.
const BAR_SLOT: u32 = 64;

/// A stacked bar chart's size: wide enough for every bar's label, with one
/// legend row under the plot.
fn bars_size(b: &Bars) -> (u32, u32) {
    let n = b.categories.len() as u32;
    (WIDTH.max(100 + n * BAR_SLOT), HEIGHT + LEGEND_ROW + 8)
}

/// Stacked bars (a latency budget): one bar per category, its parts from
/// zero up in the palette's colours, each part's value printed inside it
/// where it is tall enough and the sum above the bar; a legend of the
/// parts under the plot.
fn bars(root: &Area, title: &str, b: &Bars) -> Result<()> {
    let (plot_area, legend_area) = root.split_vertically(HEIGHT);
    let n = b.categories.len() as u32;
    let top = (0..b.categories.len())
        .filter_map(|i| b.total(i))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let y1 = if top > 0.0 { top * 1.15 } else { 1.0 };
    // x in bar widths, bar i over [i, i + 1]: labelled by hand below (an
    // integer axis would ask plotters for ticks between the bars).
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(title, (FONT, TITLE_PT))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..f64::from(n.max(1)), 0.0..y1)
        .map_err(fail(title))?;
    let fy = |v: &f64| b.y.tick(*v);
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_labels(8)
        .x_desc(b.x_label.as_str())
        .y_desc(b.y.label.as_str())
        .y_label_formatter(&fy)
        .axis_desc_style((FONT, AXIS_PT))
        .label_style((FONT, LABEL_PT))
        .max_light_lines(0)
        .bold_line_style(RGBColor(225, 225, 225))
        .draw()
        .map_err(fail(title))?;
    // The px height of one unit of y, to tell whether a part's value fits inside it.
    let (bottom, top_px) = (
        chart.backend_coord(&(0.0, 0.0)).1,
        chart.backend_coord(&(0.0, y1)).1,
    );
    let px_per_unit = f64::from((bottom - top_px).abs()) / y1;
    let inside = text_style(LABEL_PT, HPos::Center, VPos::Center).color(&WHITE);
    let above = text_style(LABEL_PT, HPos::Center, VPos::Bottom);
    for (i, name) in b.categories.iter().enumerate() {
        let x = i as f64;
        let mut base = 0.0;
        for (k, (_, values)) in b.parts.iter().enumerate() {
            let Some(v) = values[i].filter(|v| v.is_finite() && *v > 0.0) else {
                continue;
            };
            let c = PALETTE[k % PALETTE.len()];
            chart
                .draw_series([Rectangle::new(
                    [(x + 0.15, base), (x + 0.85, base + v)],
                    c.filled(),
                )])
                .map_err(fail(title))?;
            if v * px_per_unit >= px(LABEL_PT) + 4.0 {
                chart
                    .draw_series([Text::new(si(v), (x + 0.5, base + v / 2.0), inside.clone())])
                    .map_err(fail(title))?;
            }
            base += v;
        }
        if base > 0.0 {
            chart
                .draw_series([Text::new(si(base), (x + 0.5, base), above.clone())])
                .map_err(fail(title))?;
        }
        let (cx, cy) = chart.backend_coord(&(x + 0.5, 0.0));
        plot_area
            .draw(&Text::new(
                name.clone(),
                (cx, cy + 6),
                text_style(LABEL_PT, HPos::Center, VPos::Top),
            ))
            .map_err(fail(title))?;
    }
    // The legend: a swatch and a name per part, on one row.
    let text = text_style(LABEL_PT, HPos::Left, VPos::Center);
    let y = (LEGEND_ROW / 2) as i32;
    let mut x = 70;
    for (k, (name, _)) in b.parts.iter().enumerate() {
        let c = PALETTE[k % PALETTE.len()];
        legend_area
            .draw(&Rectangle::new([(x, y - 6), (x + 24, y + 6)], c.filled()))
            .map_err(fail("legend"))?;
        legend_area
            .draw(&Text::new(name.clone(), (x + 30, y), text.clone()))
            .map_err(fail("legend"))?;
        x += 30 + text_width(name, px(LABEL_PT)) + 28;
    }
    Ok(())
}

/// Shade at `t` in 0..=1: pale yellow (best) through orange to dark red
/// (worst).
fn shade(t: f64) -> RGBColor {
    const STOPS: [(u8, u8, u8); 5] = [
        (255, 255, 204),
        (254, 217, 118),
        (253, 141, 60),
        (227, 26, 28),
        (128, 0, 38),
    ];
    let f = t.clamp(0.0, 1.0) * (STOPS.len() - 1) as f64;
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

/// How a heat map's values become colours, on a log scale from `lo` to `hi`:
/// ratios diverge from 1; other values darken from the best cell to the
/// worst (up for times, down for bandwidth), over at least a factor of 4 so
/// a 15% spread stays pale rather than running the whole scale.
#[derive(Clone, Debug)]
struct ColourScale {
    lo: f64,
    hi: f64,
    ratio: bool,
    higher_is_better: bool,
}

impl ColourScale {
    /// The scale of `h`'s cells; `None` when it has no positive value.
    fn of(h: &Heatmap) -> Option<ColourScale> {
        let vals = h.cells.iter().flatten().flatten().copied();
        let vals: Vec<f64> = vals.filter(|v| v.is_finite() && *v > 0.0).collect();
        let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = vals.iter().copied().fold(0.0, f64::max);
        let (lo, hi) = match () {
            _ if h.ratio => (1.0 / 16.0, 16.0),
            _ if vals.is_empty() => return None,
            _ if h.higher_is_better => (lo.min(hi / 4.0), hi),
            _ => (lo, hi.max(lo * 4.0)),
        };
        Some(ColourScale {
            lo,
            hi,
            ratio: h.ratio,
            higher_is_better: h.higher_is_better,
        })
    }

    /// Where `v` sits on the scale: 0 at `lo`, 1 at `hi`.
    fn at(&self, v: f64) -> f64 {
        if v > 0.0 {
            ((v / self.lo).ln() / (self.hi / self.lo).ln()).clamp(0.0, 1.0)
        } else {
            0.0
        }
    }

    fn colour(&self, v: f64) -> RGBColor {
        match (self.ratio, self.higher_is_better) {
            (true, _) => diverging(v),
            (false, true) => shade(1.0 - self.at(v)),
            (false, false) => shade(self.at(v)),
        }
    }

    /// Five values evenly spread over the log scale, ends included.
    fn ticks(&self) -> Vec<f64> {
        (0..5)
            .map(|k| self.lo * (self.hi / self.lo).powf(k as f64 / 4.0))
            .collect()
    }
}

/// Heat-map cells are square, sized so the grid spans about `HEAT_GRID` px
/// whatever its rows and columns, within `CELL_MIN..=CELL_MAX`.
const HEAT_GRID: i32 = 640;
const CELL_MIN: i32 = 12;
const CELL_MAX: i32 = 72;
/// Cell values are printed up to this many rows or columns.
const VALUES_UP_TO: usize = 16;
const MARGIN: i32 = 12;
/// Room for the title above the grid, and for an axis name beside it.
const TITLE_ROOM: i32 = 40;
const DESC_ROOM: i32 = 26;
const BAR_WIDTH: i32 = 16;
/// Pixel size of text drawn at `pt` (plotters writes `pt / 1.24`).
fn px(pt: f64) -> f64 {
    pt / 1.24
}

/// About how wide `s` is in a sans-serif font of `px` pixels.
fn text_width(s: &str, px: f64) -> i32 {
    (s.chars().count() as f64 * px * 0.6).ceil() as i32
}

/// Where each part of a heat map goes, in px.
struct HeatLayout {
    width: u32,
    height: u32,
    /// Side of a (square) cell.
    cell: i32,
    /// Top-left corner of the grid.
    left: i32,
    top: i32,
    /// Every `step`-th row and column is labelled, so that labels are at
    /// least 1.2 font heights apart.
    step: usize,
    /// Column labels run upwards: one would be wider than a cell.
    rotate: bool,
    /// Height of the column labels under the grid.
    x_labels: i32,
    /// Left edge and height of the colour bar.
    bar_left: i32,
    bar_height: i32,
    scale: Option<ColourScale>,
    /// The legend's heading: the unit, or what the cells hold.
    unit: String,
}

impl HeatLayout {
    fn of(title: &str, h: &Heatmap) -> HeatLayout {
        let (xn, yn) = h.names();
        let widest = |n: &[String]| n.iter().map(|s| text_width(s, px(LABEL_PT))).max();
        let (nx, ny) = (xn.len().max(1) as i32, yn.len().max(1) as i32);
        let cell = (HEAT_GRID / nx.max(ny)).clamp(CELL_MIN, CELL_MAX);
        let step = (px(LABEL_PT) * 1.2 / cell as f64).ceil().max(1.0) as usize;
        let rotate = widest(&xn).unwrap_or(0) > cell - 4;
        let x_labels = if rotate {
            widest(&xn).unwrap_or(0) + 12
        } else {
            px(LABEL_PT).ceil() as i32 + 12
        };
        let left = MARGIN + DESC_ROOM + widest(&yn).unwrap_or(0) + 10;
        let top = MARGIN + TITLE_ROOM;
        let (grid_w, grid_h) = (nx * cell, ny * cell);
        let scale = ColourScale::of(h);
        let unit = match h.value.rsplit_once('(') {
            Some((_, u)) => u.trim_end_matches(')').to_string(),
            None => h.value.clone(),
        };
        let ticks = scale.as_ref().map_or(0, |s| {
            s.ticks()
                .iter()
                .map(|&t| text_width(&si(t), px(LABEL_PT)))
                .max()
                .unwrap_or(0)
        });
        let bar_left = left + grid_w + 28;
        let legend = (BAR_WIDTH + 10 + ticks).max(text_width(&unit, px(LABEL_PT)));
        let bar_height = grid_h.clamp(160, 400);
        let width = (bar_left + legend + MARGIN).max(text_width(title, px(TITLE_PT)) + 2 * MARGIN);
        let height = top + (grid_h + x_labels + DESC_ROOM).max(bar_height + 10) + MARGIN;
        HeatLayout {
            width: width as u32,
            height: height as u32,
            cell,
            left,
            top,
            step,
            rotate,
            x_labels,
            bar_left,
            bar_height,
            scale,
            unit,
        }
    }

    /// The top-left corner of the cell at `row`, `col`.
    fn corner(&self, row: usize, col: usize) -> (i32, i32) {
        (
            self.left + col as i32 * self.cell,
            self.top + row as i32 * self.cell,
        )
    }
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

fn text_style(pt: f64, h: HPos, v: VPos) -> TextStyle<'static> {
    TextStyle::from((FONT, pt))
        .color(&BLACK)
        .pos(Pos::new(h, v))
}

fn heatmap(root: &Area, title: &str, h: &Heatmap, l: &HeatLayout) -> Result<()> {
    root.draw(&Text::new(
        title.to_string(),
        (l.width as i32 / 2, MARGIN),
        text_style(TITLE_PT, HPos::Center, VPos::Top),
    ))
    .map_err(fail(title))?;
    cells(root, h, l).map_err(fail(title))?;
    groups(root, h, l).map_err(fail(title))?;
    axes(root, h, l).map_err(fail(title))?;
    colour_bar(root, l).map_err(fail(title))
}

type Drawn = std::result::Result<(), DrawingAreaErrorKind<std::io::Error>>;

/// Grey: a thing with itself. Missing cells are white, hatched darker.
const SELF_FILL: RGBColor = RGBColor(205, 205, 205);
const HATCH: RGBColor = RGBColor(110, 110, 110);

/// Each cell in its colour (grey on the diagonal, hatched where missing),
/// its value printed while cells are large enough; a frame round the grid.
fn cells(root: &Area, h: &Heatmap, l: &HeatLayout) -> Drawn {
    let c = l.cell;
    let values = h.cells.len().max(h.xs.len()) <= VALUES_UP_TO;
    for (r, row) in h.cells.iter().enumerate() {
        for (i, cell) in row.iter().enumerate() {
            let (x, y) = l.corner(r, i);
            let fill = match (cell, &l.scale) {
                (Some(v), Some(s)) => s.colour(*v),
                _ if h.diagonal(r, i) => SELF_FILL,
                _ if h.missing(r, i) => WHITE,
                _ => continue,
            };
            root.draw(&Rectangle::new([(x, y), (x + c, y + c)], fill.filled()))?;
            if h.missing(r, i) {
                hatch(root, (x, y), c)?;
            }
            if let Some(v) = cell.filter(|_| values) {
                value(root, v, fill, (x + c / 2, y + c / 2), c)?;
            }
        }
    }
    let (w, hgt) = (h.cells.first().map_or(0, Vec::len), h.cells.len());
    let (x1, y1) = l.corner(hgt, w);
    root.draw(&Rectangle::new(
        [(l.left, l.top), (x1, y1)],
        GREY.stroke_width(1),
    ))
}

/// Three strokes of "/" across the square of side `c` whose top-left corner
/// is `(x, y)`.
fn hatch(root: &Area, (x, y): (i32, i32), c: i32) -> Drawn {
    for (a, b) in [
        ((0, c / 2), (c / 2, 0)),
        ((0, c), (c, 0)),
        ((c / 2, c), (c, c / 2)),
    ] {
        root.draw(&PathElement::new(
            vec![(x + a.0, y + a.1), (x + b.0, y + b.1)],
            HATCH.stroke_width(1),
        ))?;
    }
    Ok(())
}

/// A cell's value centred on it, in white on dark colours, sized to fit a
/// cell of side `c` (five characters at most: "12.3k").
fn value(root: &Area, v: f64, fill: RGBColor, centre: (i32, i32), c: i32) -> Drawn {
    let luminance = 0.299 * fill.0 as f64 + 0.587 * fill.1 as f64 + 0.114 * fill.2 as f64;
    let ink = if luminance < 140.0 { WHITE } else { BLACK };
    let px = (c as f64 / 3.4).min(14.0);
    root.draw(&Text::new(
        si(v),
        centre,
        text_style(px * 1.24, HPos::Center, VPos::Center).color(&ink),
    ))
}

/// A dark line between groups (hosts), across the whole grid both ways.
fn groups(root: &Area, h: &Heatmap, l: &HeatLayout) -> Drawn {
    let Some(labels) = &h.labels else {
        return Ok(());
    };
    let n = labels.names.len();
    let (right, bottom) = l.corner(n, n);
    let line = RGBColor(40, 40, 40).stroke_width(if l.cell >= 24 { 2 } else { 1 });
    for &b in &labels.breaks {
        let (x, y) = l.corner(b, b);
        root.draw(&PathElement::new(vec![(x, l.top), (x, bottom)], line))?;
        root.draw(&PathElement::new(vec![(l.left, y), (right, y)], line))?;
    }
    Ok(())
}

/// Row names left of the grid, column names under it (upwards when wider
/// than a cell), every `step`-th; the axis names beyond them.
fn axes(root: &Area, h: &Heatmap, l: &HeatLayout) -> Drawn {
    let (xn, yn) = h.names();
    let half = l.cell / 2;
    for (j, name) in yn.iter().enumerate().step_by(l.step) {
        let (_, y) = l.corner(j, 0);
        let style = text_style(LABEL_PT, HPos::Right, VPos::Center);
        root.draw(&Text::new(name.clone(), (l.left - 6, y + half), style))?;
    }
    let (_, bottom) = l.corner(yn.len(), 0);
    for (i, name) in xn.iter().enumerate().step_by(l.step) {
        let (x, _) = l.corner(0, i);
        let style = if l.rotate {
            text_style(LABEL_PT, HPos::Right, VPos::Center).transform(FontTransform::Rotate270)
        } else {
            text_style(LABEL_PT, HPos::Center, VPos::Top)
        };
        root.draw(&Text::new(name.clone(), (x + half, bottom + 6), style))?;
    }
    let (right, _) = l.corner(0, xn.len());
    root.draw(&Text::new(
        h.x.label.clone(),
        ((l.left + right) / 2, bottom + l.x_labels),
        text_style(AXIS_PT, HPos::Center, VPos::Top),
    ))?;
    root.draw(&Text::new(
        h.y.label.clone(),
        (MARGIN + DESC_ROOM / 2, (l.top + bottom) / 2),
        text_style(AXIS_PT, HPos::Center, VPos::Center).transform(FontTransform::Rotate270),
    ))
}

/// The colour scale right of the grid: a vertical bar, values growing
/// upwards, five ticks, the unit on top.
fn colour_bar(root: &Area, l: &HeatLayout) -> Drawn {
    let Some(s) = &l.scale else {
        return Ok(());
    };
    const STEPS: i32 = 48;
    let (x, top, height) = (l.bar_left, l.top, l.bar_height);
    let bottom = top + height;
    for k in 0..STEPS {
        let v = s.lo * (s.hi / s.lo).powf((k as f64 + 0.5) / STEPS as f64);
        let (y0, y1) = (
            bottom - (k + 1) * height / STEPS,
            bottom - k * height / STEPS,
        );
        root.draw(&Rectangle::new(
            [(x, y0), (x + BAR_WIDTH, y1)],
            s.colour(v).filled(),
        ))?;
    }
    root.draw(&Rectangle::new(
        [(x, top), (x + BAR_WIDTH, bottom)],
        GREY.stroke_width(1),
    ))?;
    for t in s.ticks() {
        let y = bottom - (s.at(t) * height as f64).round() as i32;
        root.draw(&PathElement::new(
            vec![(x + BAR_WIDTH, y), (x + BAR_WIDTH + 4, y)],
            BLACK.stroke_width(1),
        ))?;
        root.draw(&Text::new(
            si(t),
            (x + BAR_WIDTH + 7, y),
            text_style(LABEL_PT, HPos::Left, VPos::Center),
        ))?;
    }
    root.draw(&Text::new(
        l.unit.clone(),
        (x, top - 8),
        text_style(LABEL_PT, HPos::Left, VPos::Bottom),
    ))
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

    #[test]
    fn a_baseline_wears_the_colour_of_its_new_series_and_leads_it_in_the_legend() {
        let s = |name: &str, role| super::super::figure::Series::new(name, role, vec![(1.0, 2.0)]);
        let mut base = s("tcp · a", Role::Reference);
        base.of = Some(1);
        base.bars = vec![(1.0, [1.5, 2.5])];
        let l = Lines {
            x: Axis::new("x", false, Scale::Count),
            y: Axis::new("y", false, Scale::Number),
            series: vec![
                base,
                s("tcp · b", Role::Measured),
                s("thread · b", Role::Measured),
            ],
        };
        assert_eq!(colour(&l, 0), colour(&l, 1));
        assert_eq!(colour(&l, 2), PALETTE[1]);
        let t = texts(&render_lines_for_test(&l));
        let legend: Vec<&String> = t.iter().filter(|x| x.contains(" · ")).collect();
        assert_eq!(legend, ["tcp · a", "tcp · b", "thread · b"]);
    }

    fn render_lines_for_test(l: &Lines) -> String {
        let mut buf = String::new();
        {
            let root = SVGBackend::with_string(&mut buf, (WIDTH, 600)).into_drawing_area();
            lines(&root, "t", l, true).unwrap();
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

    fn scale_of(cells: Vec<Option<f64>>, higher_is_better: bool) -> ColourScale {
        let h = Heatmap {
            x: Axis::new("x", false, Scale::Count),
            y: Axis::new("y", false, Scale::Count),
            xs: vec![0.0; cells.len()],
            ys: vec![0.0],
            labels: None,
            cells: vec![cells],
            value: "v (µs)".into(),
            second: None,
            ratio: false,
            higher_is_better,
        };
        ColourScale::of(&h).expect("values")
    }

    #[test]
    fn ratio_colours_split_at_one() {
        assert_eq!(diverging(1.0), RGBColor(255, 255, 255));
        assert_eq!(diverging(16.0), RGBColor(178, 24, 43));
        assert_eq!(diverging(1.0 / 16.0), RGBColor(33, 102, 172));
        let s = scale_of(vec![Some(1.0), Some(1.15)], false);
        let pale = s.colour(1.15);
        assert!(pale.2 > 100, "a 15% spread stays pale: {pale:?}");
    }

    #[test]
    fn dark_is_worse_for_times_and_for_bandwidth() {
        let light = RGBColor(255, 255, 204);
        let dark = RGBColor(128, 0, 38);
        let t = scale_of(vec![Some(1.0), Some(10.0), Some(100.0)], false);
        assert_eq!((t.colour(1.0), t.colour(100.0)), (light, dark));
        let mid = t.colour(10.0);
        assert!(mid.1 < light.1 && mid.1 > dark.1);
        // Bandwidth: the widest pair is pale, the narrowest dark.
        let b = scale_of(vec![Some(100.0), Some(1000.0), None], true);
        assert_eq!((b.colour(1000.0), b.colour(100.0)), (light, dark));
        // A 10% spread stays pale whichever way is better.
        let b = scale_of(vec![Some(900.0), Some(1000.0)], true);
        assert!(b.colour(900.0).2 > 100);
        assert_eq!(b.ticks().len(), 5);
        assert!((b.ticks()[0] - 250.0).abs() < 1e-9 && b.ticks()[4] == 1000.0);
    }

    #[test]
    fn heat_map_cells_grow_smaller_with_n_but_stay_readable() {
        let names = |n: usize| (0..n).map(|r| format!("node{:02}:{r}", r / 4)).collect();
        let square = |n: usize| Heatmap {
            x: Axis::new("to", false, Scale::Count),
            y: Axis::new("from", false, Scale::Count),
            xs: (0..n).map(|r| r as f64).collect(),
            ys: (0..n).map(|r| r as f64).collect(),
            labels: Some(super::super::figure::Labels {
                names: names(n),
                breaks: (4..n).step_by(4).collect(),
            }),
            cells: vec![vec![Some(1.0); n]; n],
            value: "v (µs)".into(),
            second: None,
            ratio: false,
            higher_is_better: false,
        };
        let four = HeatLayout::of("t", &square(4));
        let sixteen = HeatLayout::of("t", &square(16));
        let big = HeatLayout::of("t", &square(64));
        assert_eq!((four.cell, sixteen.cell, big.cell), (72, 40, 12));
        assert_eq!((four.step, sixteen.step, big.step), (1, 1, 2));
        assert!(big.rotate && big.width > 64 * 12 && big.width < 1100);
        assert!(four.width < sixteen.width && sixteen.width < big.width);
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
