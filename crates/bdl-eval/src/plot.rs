//! Small SVG figures: panels of lines, ± bands, points and box plots, laid out in a grid.
//!
//! ```
//! use bdl_eval::plot::{Figure, Panel};
//! let xs = [0.0, 1.0, 2.0];
//! let mut panel = Panel::new("MAP");
//! panel.band(&xs, &[-1.0, 0.0, 1.0], &[1.0, 2.0, 3.0], "#1f77b4").line(&xs, &[0.0, 1.0, 2.0], "#1f77b4");
//! let svg = Figure::new(1).panel(panel).to_svg();
//! assert!(svg.starts_with("<svg") && svg.contains("<polygon"));
//! ```

use std::fmt::Write;

/// Fourteen distinguishable line colours, for figures with one line per method (the first ten are
/// the usual categorical palette of matplotlib's `tab10`).
pub const PALETTE: [&str; 14] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#000000", "#aec7e8", "#ffbb78", "#98df8a",
];

const PANEL_W: f64 = 320.0;
const PANEL_H: f64 = 240.0;
const MARGIN: (f64, f64, f64, f64) = (44.0, 12.0, 28.0, 34.0); // left, right, top, bottom

/// One drawable element of a panel.
#[derive(Clone, Debug)]
enum Item {
    Line {
        xs: Vec<f64>,
        ys: Vec<f64>,
        color: String,
    },
    Band {
        xs: Vec<f64>,
        lo: Vec<f64>,
        hi: Vec<f64>,
        color: String,
    },
    Points {
        xs: Vec<f64>,
        ys: Vec<f64>,
        color: String,
    },
    /// A box plot at x: minimum, lower quartile, median, upper quartile, maximum.
    Box {
        x: f64,
        five: [f64; 5],
        color: String,
    },
}

/// One plot: a title, axis labels, and its items, drawn in the order added.
#[derive(Clone, Debug, Default)]
pub struct Panel {
    title: String,
    x_label: String,
    y_label: String,
    y_range: Option<(f64, f64)>,
    items: Vec<Item>,
    legend: Vec<(String, String)>,
}

impl Panel {
    /// An empty panel with a title.
    pub fn new(title: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            ..Self::default()
        }
    }

    /// A reliability diagram: the accuracy of each non-empty confidence bin against its mean
    /// confidence, over the diagonal of perfect calibration.
    ///
    /// ```
    /// use bdl_eval::metrics::ReliabilityBin;
    /// use bdl_eval::plot::{Figure, Panel};
    /// let bin = |lower: f64, count, confidence, accuracy| ReliabilityBin {
    ///     lower, upper: lower + 0.5, count, confidence, accuracy,
    /// };
    /// let panel = Panel::reliability("MAP at 60°", &[bin(0.0, 0, 0.0, 0.0), bin(0.5, 7, 0.8, 0.6)]);
    /// assert!(Figure::new(1).panel(panel).to_svg().contains("<circle"));
    /// ```
    pub fn reliability(title: impl Into<String>, bins: &[crate::metrics::ReliabilityBin]) -> Self {
        let used: Vec<_> = bins.iter().filter(|b| b.count > 0).collect();
        let confidence: Vec<f64> = used.iter().map(|b| b.confidence).collect();
        let accuracy: Vec<f64> = used.iter().map(|b| b.accuracy).collect();
        let mut panel = Self::new(title);
        panel
            .labels("confidence", "accuracy")
            .y_range(0.0, 1.0)
            .line(&[0.0, 1.0], &[0.0, 1.0], "#999999")
            .line(&confidence, &accuracy, "#1f77b4")
            .points(&confidence, &accuracy, "#1f77b4");
        panel
    }

    /// Sets the axis labels.
    pub fn labels(&mut self, x: impl Into<String>, y: impl Into<String>) -> &mut Self {
        self.x_label = x.into();
        self.y_label = y.into();
        self
    }

    /// Fixes the y range (otherwise it spans the data).
    pub fn y_range(&mut self, lo: f64, hi: f64) -> &mut Self {
        self.y_range = Some((lo, hi));
        self
    }

    /// Adds a legend entry (a colour swatch and its label, listed in the top-left corner).
    pub fn legend(&mut self, label: impl Into<String>, color: &str) -> &mut Self {
        self.legend.push((label.into(), color.into()));
        self
    }

    /// A polyline through (xs, ys).
    pub fn line(&mut self, xs: &[f64], ys: &[f64], color: &str) -> &mut Self {
        self.items.push(Item::Line {
            xs: xs.to_vec(),
            ys: ys.to_vec(),
            color: color.into(),
        });
        self
    }

    /// A translucent band between `lo` and `hi` over xs.
    pub fn band(&mut self, xs: &[f64], lo: &[f64], hi: &[f64], color: &str) -> &mut Self {
        self.items.push(Item::Band {
            xs: xs.to_vec(),
            lo: lo.to_vec(),
            hi: hi.to_vec(),
            color: color.into(),
        });
        self
    }

    /// Scattered points.
    pub fn points(&mut self, xs: &[f64], ys: &[f64], color: &str) -> &mut Self {
        self.items.push(Item::Points {
            xs: xs.to_vec(),
            ys: ys.to_vec(),
            color: color.into(),
        });
        self
    }

    /// The level set {f = `level`} of a function sampled on a grid (`values[i][j]` at
    /// (`xs[j]`, `ys[i]`)), drawn as line segments by marching squares (each grid cell's edges
    /// cut where f crosses the level, by linear interpolation; in a saddle cell the mean of the
    /// corners decides which pair of corners is joined).
    ///
    /// ```
    /// use bdl_eval::plot::{Figure, Panel};
    /// let grid: Vec<f64> = (0..21).map(|i| -2.0 + 0.2 * i as f64).collect();
    /// let f: Vec<Vec<f64>> = grid.iter().map(|y| grid.iter().map(|x| x * x + y * y).collect()).collect();
    /// let mut panel = Panel::new("circle");
    /// panel.contour(&grid, &grid, &f, 1.0, "#1f77b4");
    /// assert!(Figure::new(1).panel(panel).to_svg().matches("<polyline").count() > 10);
    /// ```
    pub fn contour(
        &mut self,
        xs: &[f64],
        ys: &[f64],
        values: &[Vec<f64>],
        level: f64,
        color: &str,
    ) -> &mut Self {
        for i in 0..ys.len().saturating_sub(1) {
            for j in 0..xs.len().saturating_sub(1) {
                // Corners counter-clockwise from (x_j, y_i).
                let corners = [
                    (xs[j], ys[i], values[i][j]),
                    (xs[j + 1], ys[i], values[i][j + 1]),
                    (xs[j + 1], ys[i + 1], values[i + 1][j + 1]),
                    (xs[j], ys[i + 1], values[i + 1][j]),
                ];
                if corners.iter().any(|c| !c.2.is_finite()) {
                    continue;
                }
                // The crossing on each edge whose ends lie on either side of the level.
                let cut = |a: (f64, f64, f64), b: (f64, f64, f64)| {
                    ((a.2 > level) != (b.2 > level)).then(|| {
                        let t = (level - a.2) / (b.2 - a.2);
                        (a.0 + t * (b.0 - a.0), a.1 + t * (b.1 - a.1))
                    })
                };
                let crossings: Vec<(f64, f64)> = (0..4)
                    .filter_map(|e| cut(corners[e], corners[(e + 1) % 4]))
                    .collect();
                let centre = corners.iter().map(|c| c.2).sum::<f64>() / 4.0;
                let pairs: Vec<[(f64, f64); 2]> = match crossings.as_slice() {
                    [a, b] => vec![[*a, *b]],
                    // A saddle: the corners on the centre's side are joined through it, so the
                    // segments cut off the other two corners, each on its own.
                    [a, b, c, d] if (centre > level) == (corners[0].2 > level) => {
                        vec![[*a, *b], [*c, *d]]
                    }
                    [a, b, c, d] => vec![[*a, *d], [*b, *c]],
                    _ => Vec::new(),
                };
                for [(x0, y0), (x1, y1)] in pairs {
                    self.line(&[x0, x1], &[y0, y1], color);
                }
            }
        }
        self
    }

    /// A box plot of `values` at x: the box spans the quartiles (linear interpolation between
    /// order statistics), the bar inside is the median, the whiskers reach the extremes.
    /// Non-finite values are left out; no box is drawn when none is left.
    ///
    /// ```
    /// use bdl_eval::plot::{Figure, Panel};
    /// let mut panel = Panel::new("acceptance per node");
    /// panel.boxes(1.0, &[0.2, 0.3, 0.35, 0.5], "#1f77b4").boxes(2.0, &[0.6, 0.7], "#1f77b4");
    /// let svg = Figure::new(1).panel(panel).to_svg();
    /// assert_eq!(svg.matches(r#"fill-opacity="0.25" stroke="#).count(), 2);
    /// ```
    pub fn boxes(&mut self, x: f64, values: &[f64], color: &str) -> &mut Self {
        let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        if sorted.is_empty() {
            return self;
        }
        sorted.sort_by(f64::total_cmp);
        let quantile = |p: f64| {
            let at = p * (sorted.len() - 1) as f64;
            let (i, frac) = (at.floor() as usize, at.fract());
            let next = sorted[(i + 1).min(sorted.len() - 1)];
            sorted[i] + frac * (next - sorted[i])
        };
        let five = [0.0, 0.25, 0.5, 0.75, 1.0].map(quantile);
        self.items.push(Item::Box {
            x,
            five,
            color: color.into(),
        });
        self
    }

    fn extent(&self) -> ((f64, f64), (f64, f64)) {
        let mut x = (f64::INFINITY, f64::NEG_INFINITY);
        let mut y = x;
        let grow = |r: &mut (f64, f64), v: f64| {
            if v.is_finite() {
                *r = (r.0.min(v), r.1.max(v));
            }
        };
        for item in &self.items {
            let (xs, ys): (&[f64], Vec<&[f64]>) = match item {
                Item::Line { xs, ys, .. } | Item::Points { xs, ys, .. } => (xs, vec![ys]),
                Item::Band { xs, lo, hi, .. } => (xs, vec![lo, hi]),
                Item::Box { x, five, .. } => (std::slice::from_ref(x), vec![&five[..]]),
            };
            xs.iter().for_each(|&v| grow(&mut x, v));
            ys.iter()
                .flat_map(|s| s.iter())
                .for_each(|&v| grow(&mut y, v));
        }
        let pad = |(lo, hi): (f64, f64)| {
            if !lo.is_finite() {
                (0.0, 1.0)
            } else if hi - lo < 1e-12 {
                (lo - 0.5, hi + 0.5)
            } else {
                (lo, hi)
            }
        };
        (pad(x), self.y_range.unwrap_or_else(|| pad(y)))
    }

    fn draw(&self, svg: &mut String, ox: f64, oy: f64) {
        let ((x0, x1), (y0, y1)) = self.extent();
        let (l, r, t, b) = MARGIN;
        let (w, h) = (PANEL_W - l - r, PANEL_H - t - b);
        let px = |x: f64| ox + l + (x - x0) / (x1 - x0) * w;
        let py = |y: f64| oy + t + (1.0 - (y.clamp(y0, y1) - y0) / (y1 - y0)) * h;
        let _ = write!(
            svg,
            r##"<rect x="{:.1}" y="{:.1}" width="{w:.1}" height="{h:.1}" fill="white" stroke="#444"/>"##,
            ox + l,
            oy + t
        );
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" font-size="13" text-anchor="middle">{}</text>"#,
            ox + l + w / 2.0,
            oy + t - 8.0,
            escape(&self.title)
        );
        for tick in ticks(x0, x1) {
            let _ = write!(
                svg,
                r#"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="middle">{}</text>"#,
                px(tick),
                oy + t + h + 13.0,
                fmt_tick(tick)
            );
        }
        for tick in ticks(y0, y1) {
            let _ = write!(
                svg,
                r#"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">{}</text>"#,
                ox + l - 4.0,
                py(tick) + 3.0,
                fmt_tick(tick)
            );
        }
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"#,
            ox + l + w / 2.0,
            oy + PANEL_H - 4.0,
            escape(&self.x_label)
        );
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle" transform="rotate(-90 {:.1} {:.1})">{}</text>"#,
            ox + 11.0,
            oy + t + h / 2.0,
            ox + 11.0,
            oy + t + h / 2.0,
            escape(&self.y_label)
        );
        self.draw_items(svg, &px, &py);
        for (i, (label, color)) in self.legend.iter().enumerate() {
            let y = oy + t + 12.0 + 13.0 * i as f64;
            let _ = write!(
                svg,
                r#"<rect x="{:.1}" y="{:.1}" width="10" height="3" fill="{color}"/><text x="{:.1}" y="{:.1}" font-size="10">{}</text>"#,
                ox + l + 6.0,
                y - 4.0,
                ox + l + 20.0,
                y,
                escape(label)
            );
        }
    }

    fn draw_items(&self, svg: &mut String, px: &impl Fn(f64) -> f64, py: &impl Fn(f64) -> f64) {
        for item in &self.items {
            match item {
                Item::Line { xs, ys, color } => {
                    let pts: Vec<String> = xs
                        .iter()
                        .zip(ys)
                        .map(|(&x, &y)| format!("{:.1},{:.1}", px(x), py(y)))
                        .collect();
                    let _ = write!(
                        svg,
                        r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="1.6"/>"#,
                        pts.join(" ")
                    );
                }
                Item::Band { xs, lo, hi, color } => {
                    let upper = xs
                        .iter()
                        .zip(hi)
                        .map(|(&x, &y)| format!("{:.1},{:.1}", px(x), py(y)));
                    let lower = xs
                        .iter()
                        .zip(lo)
                        .rev()
                        .map(|(&x, &y)| format!("{:.1},{:.1}", px(x), py(y)));
                    let pts: Vec<String> = upper.chain(lower).collect();
                    let _ = write!(
                        svg,
                        r#"<polygon points="{}" fill="{color}" fill-opacity="0.25" stroke="none"/>"#,
                        pts.join(" ")
                    );
                }
                Item::Box { x, five, color } => {
                    let [lo, q1, median, q3, hi] = five.map(py);
                    let (x, half) = (px(*x), 6.0);
                    let _ = write!(
                        svg,
                        r#"<line x1="{x:.1}" y1="{hi:.1}" x2="{x:.1}" y2="{q3:.1}" stroke="{color}"/><line x1="{x:.1}" y1="{q1:.1}" x2="{x:.1}" y2="{lo:.1}" stroke="{color}"/><rect x="{:.1}" y="{q3:.1}" width="{:.1}" height="{:.1}" fill="{color}" fill-opacity="0.25" stroke="{color}"/><line x1="{:.1}" y1="{median:.1}" x2="{:.1}" y2="{median:.1}" stroke="{color}" stroke-width="2"/>"#,
                        x - half,
                        2.0 * half,
                        (q1 - q3).max(0.5),
                        x - half,
                        x + half
                    );
                }
                Item::Points { xs, ys, color } => {
                    for (&x, &y) in xs.iter().zip(ys) {
                        let _ = write!(
                            svg,
                            r#"<circle cx="{:.1}" cy="{:.1}" r="1.6" fill="{color}"/>"#,
                            px(x),
                            py(y)
                        );
                    }
                }
            }
        }
    }
}

/// Panels in a grid of `columns` columns.
#[derive(Clone, Debug)]
pub struct Figure {
    columns: usize,
    panels: Vec<Panel>,
}

impl Figure {
    /// An empty figure with `columns` panels per row.
    pub fn new(columns: usize) -> Self {
        Self {
            columns: columns.max(1),
            panels: Vec::new(),
        }
    }

    /// Appends a panel.
    pub fn panel(mut self, panel: Panel) -> Self {
        self.panels.push(panel);
        self
    }

    /// The figure as an SVG document.
    pub fn to_svg(&self) -> String {
        let cols = self.columns.min(self.panels.len().max(1));
        let rows = self.panels.len().div_ceil(cols).max(1);
        let (w, h) = (cols as f64 * PANEL_W, rows as f64 * PANEL_H);
        let mut svg = format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif">"#
        );
        let _ = write!(svg, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
        for (i, p) in self.panels.iter().enumerate() {
            p.draw(
                &mut svg,
                (i % cols) as f64 * PANEL_W,
                (i / cols) as f64 * PANEL_H,
            );
        }
        svg.push_str("</svg>\n");
        svg
    }
}

/// Five to ten round tick positions inside [lo, hi].
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    // The largest round step (1, 2 or 5 times a power of ten) giving at least five intervals.
    let raw = (hi - lo) / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [5.0, 2.0, 1.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s <= raw)
        .unwrap_or(mag);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last).map(|i| i as f64 * step).collect()
}

fn fmt_tick(v: f64) -> String {
    let s = format!("{:.3}", v);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.into() }
}

/// One cell of an [`image_grid`]: a grayscale image (row-major, `width` pixels wide, drawn from
/// its smallest value as black to its largest as white), a caption, and labelled bars with
/// values in [0, 1] (class probabilities, say).
#[derive(Clone, Debug, PartialEq)]
pub struct ImageCell {
    /// The pixels, row-major.
    pub pixels: Vec<f64>,
    /// Pixels per row.
    pub width: usize,
    /// The caption above the image.
    pub caption: String,
    /// (label, value) bars below the image.
    pub bars: Vec<(String, f64)>,
}

/// Images with their bars, `columns` per row, as an SVG document.
///
/// ```
/// use bdl_eval::plot::{ImageCell, image_grid};
/// let cell = ImageCell {
///     pixels: vec![0.0, 1.0, 1.0, 0.0],
///     width: 2,
///     caption: "label 4".into(),
///     bars: vec![("4".into(), 0.48), ("9".into(), 0.45)],
/// };
/// let svg = image_grid(&[cell.clone(), cell], 4);
/// assert!(svg.starts_with("<svg") && svg.matches("label 4").count() == 2);
/// ```
pub fn image_grid(cells: &[ImageCell], columns: usize) -> String {
    const IMAGE: f64 = 84.0;
    const BAR: f64 = 14.0;
    let columns = columns.clamp(1, cells.len().max(1));
    let bars = cells.iter().map(|c| c.bars.len()).max().unwrap_or(0) as f64;
    let (cell_w, cell_h) = (IMAGE + 90.0, 22.0 + IMAGE + 6.0 + bars * BAR + 8.0);
    let rows = cells.len().div_ceil(columns).max(1);
    let (w, h) = (columns as f64 * cell_w, rows as f64 * cell_h);
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif"><rect width="{w}" height="{h}" fill="white"/>"#
    );
    for (i, cell) in cells.iter().enumerate() {
        let (ox, oy) = (
            (i % columns) as f64 * cell_w + 8.0,
            (i / columns) as f64 * cell_h,
        );
        let _ = write!(
            svg,
            r#"<text x="{ox:.1}" y="{:.1}" font-size="11">{}</text>"#,
            oy + 15.0,
            escape(&cell.caption)
        );
        let finite = cell.pixels.iter().copied().filter(|v| v.is_finite());
        let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
        let width = cell.width.max(1);
        let height = cell.pixels.len().div_ceil(width).max(1);
        let size = IMAGE / width.max(height) as f64;
        // A black square, then only the pixels that are not black.
        let _ = write!(
            svg,
            r#"<rect x="{ox:.1}" y="{:.1}" width="{:.2}" height="{:.2}" fill="black"/>"#,
            oy + 22.0,
            width as f64 * size,
            height as f64 * size
        );
        for (k, &v) in cell.pixels.iter().enumerate() {
            let level = if hi > lo { (v - lo) / (hi - lo) } else { 0.0 };
            let g = (255.0 * level.clamp(0.0, 1.0)).round() as u8;
            if g == 0 {
                continue;
            }
            let _ = write!(
                svg,
                r#"<rect x="{:.2}" y="{:.2}" width="{:.2}" height="{:.2}" fill="rgb({g},{g},{g})"/>"#,
                ox + (k % width) as f64 * size,
                oy + 22.0 + (k / width) as f64 * size,
                size + 0.05,
                size + 0.05
            );
        }
        for (b, (label, value)) in cell.bars.iter().enumerate() {
            let y = oy + 22.0 + IMAGE + 6.0 + b as f64 * BAR;
            let _ = write!(
                svg,
                r##"<text x="{ox:.1}" y="{:.1}" font-size="10">{}</text><rect x="{:.1}" y="{:.1}" width="{:.1}" height="9" fill="#1f77b4"/><text x="{:.1}" y="{:.1}" font-size="10">{value:.2}</text>"##,
                y + 9.0,
                escape(label),
                ox + 62.0,
                y + 1.0,
                60.0 * value.clamp(0.0, 1.0),
                ox + 126.0,
                y + 9.0
            );
        }
    }
    svg.push_str("</svg>");
    svg
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The level set of x² + y² at 1 on a 0.05 grid: every segment's ends lie within 0.002 of
    /// the unit circle (linear interpolation of a quadratic over one cell), and the segments
    /// go all round (as many as cells the circle crosses, about 4 · 2/0.05 = 160).
    #[test]
    fn contour_of_a_circle() {
        let grid: Vec<f64> = (0..=80).map(|i| -2.0 + 0.05 * i as f64).collect();
        let f: Vec<Vec<f64>> = grid
            .iter()
            .map(|y| grid.iter().map(|x| x * x + y * y).collect())
            .collect();
        let mut panel = Panel::new("");
        panel.contour(&grid, &grid, &f, 1.0, "#000");
        let mut angles = Vec::new();
        for item in &panel.items {
            let Item::Line { xs, ys, .. } = item else {
                panic!("segments only")
            };
            for (x, y) in xs.iter().zip(ys) {
                assert!(((x * x + y * y).sqrt() - 1.0).abs() < 2e-3, "({x}, {y})");
                angles.push(y.atan2(*x));
            }
        }
        assert!(
            (150..=170).contains(&panel.items.len()),
            "{}",
            panel.items.len()
        );
        angles.sort_by(f64::total_cmp);
        let widest = angles.windows(2).map(|w| w[1] - w[0]).fold(0.0, f64::max);
        assert!(widest < 0.1, "a gap of {widest} rad");
    }

    /// Quartiles interpolate between order statistics; NaN is left out; nothing, no box.
    #[test]
    fn box_quartiles() {
        let five = |values: &[f64]| {
            let mut panel = Panel::new("");
            panel.boxes(0.0, values, "#000");
            match panel.items.first() {
                Some(Item::Box { five, .. }) => Some(*five),
                _ => None,
            }
        };
        assert_eq!(
            five(&[5.0, 1.0, 3.0, 2.0, 4.0]),
            Some([1.0, 2.0, 3.0, 4.0, 5.0])
        );
        assert_eq!(
            five(&[10.0, f64::NAN, 0.0]),
            Some([0.0, 2.5, 5.0, 7.5, 10.0])
        );
        assert_eq!(five(&[f64::NAN]), None);
    }

    #[test]
    fn ticks_are_round_and_inside() {
        assert_eq!(
            ticks(0.0, 1.0),
            vec![0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]
        );
        let t = ticks(-3.3, 7.9);
        assert!(t.iter().all(|v| (-3.3..=7.9).contains(v)) && t.len() >= 4);
    }

    #[test]
    fn grid_has_one_title_per_panel() {
        let fig = (0..5).fold(Figure::new(3), |f, i| f.panel(Panel::new(format!("p{i}"))));
        let svg = fig.to_svg();
        assert!(svg.contains(r#"width="960" height="480""#));
        assert_eq!(svg.matches("font-size=\"13\"").count(), 5);
    }
}
