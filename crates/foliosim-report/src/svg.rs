//! Minimal SVG charts for the HTML report: line charts (time series, per-iteration series) and
//! horizontal grouped bar charts (the seed's figures beside ours). Hand-built: two chart kinds
//! do not need a plotting crate. Margins are sized from the longest label, so no label is cut
//! off; text is plain SVG `<text>` in the page's font, and nothing is fetched.

use std::fmt::Write as _;

/// Tableau 10: distinguishable, and readable on white.
const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];
/// Approximate width of a character of the 12 px sans-serif font, for sizing margins.
const CHAR_W: f64 = 6.8;
const FONT: &str = "font-family=\"sans-serif\" font-size=\"12\"";

pub fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// Past the palette, lines are told apart by their dashes too.
fn dash(i: usize) -> &'static str {
    ["", " stroke-dasharray=\"7 3\"", " stroke-dasharray=\"2 2\""][(i / PALETTE.len()) % 3]
}

pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Break `s` into lines of at most `max` characters at spaces (a word longer than a line is
/// cut into pieces): nothing is left out.
pub fn wrap(s: &str, max: usize) -> Vec<String> {
    let max = max.max(8);
    let mut lines: Vec<String> = Vec::new();
    let mut cur = String::new();
    for word in s.split(' ') {
        let mut word: Vec<char> = word.chars().collect();
        while word.len() > max {
            if !cur.is_empty() {
                lines.push(std::mem::take(&mut cur));
            }
            lines.push(word.drain(..max).collect());
        }
        let word: String = word.into_iter().collect();
        if !cur.is_empty() && cur.chars().count() + 1 + word.chars().count() > max {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(&word);
    }
    if !cur.is_empty() || lines.is_empty() {
        lines.push(cur);
    }
    lines
}

/// `<tspan>`s of `lines` stacked from `y`, `LINE_H` apart, at `x`.
fn tspans(x: f64, y: f64, lines: &[String]) -> String {
    let mut out = String::new();
    for (i, l) in lines.iter().enumerate() {
        let _ = write!(
            out,
            "<tspan x=\"{x:.1}\" y=\"{:.1}\">{}</tspan>",
            y + LINE_H * i as f64,
            escape(l)
        );
    }
    out
}

const LINE_H: f64 = 14.0;

/// A number for an axis or a bar: 3 significant digits, k/M/G past 10 000.
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a >= 1e4 {
        for (div, suffix) in [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")] {
            if a >= div {
                return format!("{}{suffix}", trim(v / div));
            }
        }
    }
    trim(v)
}

fn trim(v: f64) -> String {
    let a = v.abs();
    let s = if a == 0.0 {
        "0".to_string()
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    };
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    // A tiny negative rounds to "-0": say 0.
    if s == "-0" {
        "0".into()
    } else {
        s
    }
}

/// Ticks covering [lo, hi] at a 1-2-5 step; the range extended to whole ticks.
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else {
        (lo - 1.0, lo + 1.0)
    };
    let raw = (hi - lo) / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).floor() * step;
    let mut out = Vec::new();
    let mut t = first;
    while t < hi + step * 0.999 {
        out.push(if t.abs() < step * 1e-9 { 0.0 } else { t });
        t += step;
        if out.len() > 50 {
            break;
        }
    }
    out
}

/// One line of a line chart; NaN values break the line.
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// Where a chart's plot area lies and the data range it shows.
struct Frame {
    left: f64,
    top: f64,
    plot_w: f64,
    plot_h: f64,
    /// The data range of each axis: its first and last tick.
    x: (f64, f64),
    y: (f64, f64),
}

impl Frame {
    fn sx(&self, x: f64) -> f64 {
        self.left + (x - self.x.0) / (self.x.1 - self.x.0) * self.plot_w
    }

    fn sy(&self, y: f64) -> f64 {
        self.top + self.plot_h - (y - self.y.0) / (self.y.1 - self.y.0) * self.plot_h
    }
}

/// The `<svg>` element, its title, and the title shown at `title_x`.
fn svg_open(width: f64, height: f64, title: &str, title_x: f64) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" {FONT} role=\"img\">"
    );
    let _ = write!(s, "<title>{}</title>", escape(title));
    let _ = write!(
        s,
        "<text x=\"{title_x}\" y=\"16\" font-weight=\"bold\">{}</text>",
        escape(title)
    );
    s
}

/// The x axis's label, centred below the plot.
fn x_axis_label(s: &mut String, f: &Frame, x_label: &str) {
    let _ = write!(
        s,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
        f.left + f.plot_w / 2.0,
        f.top + f.plot_h + 34.0,
        escape(x_label)
    );
}

/// The smallest and largest finite x and y of the series (y from 0 at least); a unit range
/// when there is none.
fn data_bounds(series: &[Series]) -> (f64, f64, f64, f64) {
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, 0.0f64, f64::MIN);
    for &(x, y) in series
        .iter()
        .flat_map(|s| s.points.iter())
        .filter(|p| p.0.is_finite() && p.1.is_finite())
    {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        (x0, x1, y1) = (0.0, 1.0, 1.0);
    }
    (x0, x1, y0, y1)
}

/// The legend from `legend_top`: each label whole, wrapped to the chart's width. Returns
/// each series' (baseline, lines) and the chart's height.
fn line_legend(
    series: &[Series],
    width: f64,
    left: f64,
    legend_top: f64,
) -> (Vec<(f64, Vec<String>)>, f64) {
    let max_chars = ((width - left - 30.0) / CHAR_W) as usize;
    let mut legend: Vec<(f64, Vec<String>)> = Vec::new();
    let mut ly = legend_top;
    for ser in series {
        let lines = wrap(&ser.label, max_chars);
        let next = ly + LINE_H * (lines.len() - 1) as f64 + 18.0;
        legend.push((ly, lines));
        ly = next;
    }
    (legend, ly + 4.0)
}

/// A line chart `width` px wide; the legend (one row per series) below it.
pub fn line_chart(title: &str, x_label: &str, y_label: &str, series: &[Series]) -> String {
    let width = 760.0;
    let plot_h = 240.0;
    let (x0, x1, y0, y1) = data_bounds(series);
    let yt = ticks(y0, y1.max(y0));
    let xt = ticks(x0, x1);
    let ytext_w = yt.iter().map(|t| fmt_num(*t).len()).max().unwrap_or(1) as f64 * CHAR_W;
    let left = 24.0 + ytext_w + 8.0;
    let right = 16.0;
    let top = 28.0;
    let f = Frame {
        left,
        top,
        plot_w: width - left - right,
        plot_h,
        x: (xt[0], *xt.last().unwrap()),
        y: (yt[0], *yt.last().unwrap()),
    };
    let (legend, height) = line_legend(series, width, left, top + plot_h + 58.0);
    let mut s = svg_open(width, height, title, left);
    line_grid(&mut s, &f, &xt, &yt);
    x_axis_label(&mut s, &f, x_label);
    let _ = write!(
        s,
        "<text transform=\"translate(14 {:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
        top + plot_h / 2.0,
        escape(y_label)
    );
    for (i, ser) in series.iter().enumerate() {
        line_path(&mut s, &f, i, ser);
        let (ly, lines) = &legend[i];
        let _ = write!(
            s,
            "<line x1=\"{left}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"{}\"{} stroke-width=\"3\"/><text>{}<title>{}</title></text>",
            left + 14.0,
            ly - 4.0,
            ly - 4.0,
            color(i),
            dash(i),
            tspans(left + 20.0, *ly, lines),
            escape(&ser.label)
        );
    }
    s.push_str("</svg>");
    s
}

/// The line chart's grid lines and tick labels, and the plot's border.
fn line_grid(s: &mut String, f: &Frame, xt: &[f64], yt: &[f64]) {
    let (left, top, plot_w, plot_h) = (f.left, f.top, f.plot_w, f.plot_h);
    for t in yt {
        let y = f.sy(*t);
        let _ = write!(
            s,
            "<line x1=\"{left}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#e3e3e3\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            left + plot_w,
            left - 6.0,
            y + 4.0,
            fmt_num(*t)
        );
    }
    for t in xt {
        let x = f.sx(*t);
        let _ = write!(
            s,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{top}\" y2=\"{:.1}\" stroke=\"#f0f0f0\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            top + plot_h,
            top + plot_h + 16.0,
            fmt_num(*t)
        );
    }
    let _ = write!(
        s,
        "<rect x=\"{left}\" y=\"{top}\" width=\"{plot_w:.1}\" height=\"{plot_h}\" fill=\"none\" stroke=\"#888\"/>"
    );
}

/// Series `i` as a path broken at its non-finite points; a point with no finite neighbour
/// draws no line, so it is marked with a dot.
fn line_path(s: &mut String, f: &Frame, i: usize, ser: &Series) {
    let mut path = String::new();
    let mut pen_down = false;
    let finite = |j: usize| {
        ser.points
            .get(j)
            .is_some_and(|p: &(f64, f64)| p.0.is_finite() && p.1.is_finite())
    };
    for (j, &(x, y)) in ser.points.iter().enumerate() {
        if finite(j) && !(j > 0 && finite(j - 1)) && !finite(j + 1) {
            let _ = write!(
                s,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"1.8\" fill=\"{}\"/>",
                f.sx(x),
                f.sy(y),
                color(i)
            );
        }
        if x.is_finite() && y.is_finite() {
            let _ = write!(
                path,
                "{}{:.1},{:.1}",
                if pen_down { " L" } else { " M" },
                f.sx(x),
                f.sy(y)
            );
            pen_down = true;
        } else {
            pen_down = false;
        }
    }
    if !path.is_empty() {
        let _ = write!(
            s,
            "<path d=\"{}\" fill=\"none\" stroke=\"{}\"{} stroke-width=\"1.8\"><title>{}</title></path>",
            path.trim_start(),
            color(i),
            dash(i),
            escape(&ser.label)
        );
    }
}

/// Horizontal grouped bars: one group per category (its label on the left), one bar per
/// series in it (None: no bar). Values can be negative.
pub fn bar_chart(
    title: &str,
    x_label: &str,
    categories: &[String],
    series: &[(String, Vec<Option<f64>>)],
) -> String {
    let width = 760.0;
    let bar_h = 12.0;
    // Category names whole, wrapped at 36 characters.
    let wrapped: Vec<Vec<String>> = categories.iter().map(|c| wrap(c, 36)).collect();
    let most_lines = wrapped.iter().map(Vec::len).max().unwrap_or(1) as f64;
    let group_h = (bar_h * series.len() as f64).max(LINE_H * most_lines) + 10.0;
    let label_w = wrapped
        .iter()
        .flatten()
        .map(|c| c.chars().count())
        .max()
        .unwrap_or(1) as f64
        * CHAR_W;
    let left = label_w + 16.0;
    let right = 60.0;
    let top = 28.0;
    let plot_h = group_h * categories.len() as f64;
    let values = || series.iter().flat_map(|(_, v)| v.iter().flatten().copied());
    let lo = values().fold(0.0f64, f64::min);
    let hi = values().fold(0.0f64, f64::max);
    let xt = ticks(lo, if hi > lo { hi } else { lo + 1.0 });
    let f = Frame {
        left,
        top,
        plot_w: width - left - right,
        plot_h,
        x: (xt[0], *xt.last().unwrap()),
        y: (0.0, 1.0),
    };
    let legend_top = top + plot_h + 58.0;
    let height = legend_top + 18.0 * series.len() as f64 + 4.0;
    let mut s = svg_open(width, height, title, 8.0);
    for t in &xt {
        let x = f.sx(*t);
        let _ = write!(
            s,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{top}\" y2=\"{:.1}\" stroke=\"{}\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            top + plot_h,
            if *t == 0.0 { "#888" } else { "#e8e8e8" },
            top + plot_h + 16.0,
            fmt_num(*t)
        );
    }
    for (ci, cat) in categories.iter().enumerate() {
        let gy = top + group_h * ci as f64;
        let lines = &wrapped[ci];
        let _ = write!(
            s,
            "<text text-anchor=\"end\">{}<title>{}</title></text>",
            tspans(
                left - 8.0,
                gy + group_h / 2.0 + 4.0 - LINE_H * (lines.len() - 1) as f64 / 2.0,
                lines
            ),
            escape(cat)
        );
        for (si, (name, vals)) in series.iter().enumerate() {
            if let Some(v) = vals.get(ci).copied().flatten() {
                bar(&mut s, &f, gy + 5.0 + bar_h * si as f64, bar_h, si, name, v);
            }
        }
    }
    x_axis_label(&mut s, &f, x_label);
    for (i, (name, _)) in series.iter().enumerate() {
        bar_legend_entry(&mut s, left, legend_top + 18.0 * i as f64, i, name);
    }
    s.push_str("</svg>");
    s
}

/// Series `i`'s colour and name, on the legend row at `ly`.
fn bar_legend_entry(s: &mut String, left: f64, ly: f64, i: usize, name: &str) {
    let _ = write!(
        s,
        "<rect x=\"{left}\" y=\"{:.1}\" width=\"14\" height=\"10\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{ly:.1}\">{}</text>",
        ly - 9.0,
        color(i),
        left + 20.0,
        escape(name)
    );
}

/// One bar of series `si` at `y`, from 0 to `v`, with its value beside its end.
fn bar(s: &mut String, f: &Frame, y: f64, bar_h: f64, si: usize, name: &str, v: f64) {
    let (xlo, xhi) = f.x;
    let (a, b) = (f.sx(0.0f64.clamp(xlo, xhi)), f.sx(v));
    let _ = write!(
        s,
        "<rect x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{}: {}</title></rect>",
        a.min(b),
        (b - a).abs().max(0.5),
        bar_h - 2.0,
        color(si),
        escape(name),
        fmt_num(v)
    );
    let (tx, anchor) = if v >= 0.0 {
        (a.max(b) + 4.0, "start")
    } else {
        (a.min(b) - 4.0, "end")
    };
    let _ = write!(
        s,
        "<text x=\"{tx:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"{anchor}\">{}</text>",
        y + bar_h - 3.0,
        fmt_num(v)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_cover_the_range() {
        let t = ticks(0.0, 93.3);
        assert_eq!(t[0], 0.0);
        assert!(*t.last().unwrap() >= 93.3);
        let t = ticks(-14.6, 97.7);
        assert!(t[0] <= -14.6 && *t.last().unwrap() >= 97.7);
        assert_eq!(fmt_num(12345.0), "12.3k");
        assert_eq!(fmt_num(0.5), "0.5");
        assert_eq!(fmt_num(-9.1), "-9.1");
    }

    #[test]
    fn charts_escape_labels_and_are_well_formed() {
        let svg = line_chart(
            "a <b>",
            "s",
            "%",
            &[Series {
                label: "x&y".into(),
                points: vec![(0.0, 1.0), (1.0, f64::NAN), (2.0, 3.0)],
            }],
        );
        assert!(svg.contains("a &lt;b&gt;") && svg.contains("x&amp;y"));
        assert_eq!(svg.matches("<svg").count(), svg.matches("</svg>").count());
        let bars = bar_chart(
            "t",
            "%",
            &["6.9 4K".into(), "6.10 64K".into()],
            &[("seed".into(), vec![Some(-9.1), None])],
        );
        assert!(bars.contains("-9.1"));
    }
}
