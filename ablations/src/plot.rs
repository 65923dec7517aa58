//! Line charts as standalone SVG files (no plotting library: a few hundred bytes of markup per chart, so
//! the build stays lean). Used for sweep curves: a metric against the swept value, one line per series.

use std::fmt::Write;

/// The x axis: numbers (positions to scale), or categories (evenly spaced, in order).
#[derive(Debug, Clone, PartialEq)]
pub enum XAxis {
    Numeric,
    Categories(Vec<String>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    /// (x, y); for a categorical axis, x is the category's index.
    pub points: Vec<(f64, f64)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x: XAxis,
    pub series: Vec<Series>,
}

const W: f64 = 760.0;
const H: f64 = 440.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 250.0;
const TOP: f64 = 44.0;
const BOTTOM: f64 = 56.0;
const COLORS: [&str; 10] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

/// Tick values covering [lo, hi] at a step of 1, 2 or 5 times a power of ten (about `n` ticks).
pub fn nice_ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let span = if hi > lo { hi - lo } else { lo.abs().max(1.0) };
    let raw = span / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag);
    let (first, last) = ((lo / step).floor() as i64, ((hi / step).ceil() as i64).max((lo / step).floor() as i64 + 1));
    let ticks: Vec<f64> = (first..=last).map(|i| i as f64 * step).collect();
    ticks
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn fmt_tick(v: f64) -> String {
    if v == v.round() && v.abs() < 1e6 { format!("{v:.0}") } else { format!("{}", (v * 1000.0).round() / 1000.0) }
}

impl Chart {
    pub fn svg(&self) -> String {
        let points = self.series.iter().flat_map(|s| s.points.iter());
        let (mut x_lo, mut x_hi, mut y_hi) = (f64::INFINITY, f64::NEG_INFINITY, 0f64);
        let mut y_lo = 0f64;
        for &(x, y) in points {
            x_lo = x_lo.min(x);
            x_hi = x_hi.max(x);
            y_lo = y_lo.min(y);
            y_hi = y_hi.max(y);
        }
        if let XAxis::Categories(c) = &self.x {
            (x_lo, x_hi) = (-0.5, c.len() as f64 - 0.5);
        }
        if !x_lo.is_finite() {
            (x_lo, x_hi) = (0.0, 1.0);
        }
        let y_ticks = nice_ticks(y_lo, y_hi, 6);
        let (y_lo, y_hi) = (y_ticks[0], *y_ticks.last().expect("two ticks"));
        let x_ticks: Vec<(f64, String)> = match &self.x {
            XAxis::Numeric => {
                let ticks = nice_ticks(x_lo, x_hi, 8);
                (x_lo, x_hi) = (ticks[0], *ticks.last().expect("two ticks"));
                ticks.into_iter().map(|t| (t, fmt_tick(t))).collect()
            }
            XAxis::Categories(c) => c.iter().enumerate().map(|(i, l)| (i as f64, l.clone())).collect(),
        };
        let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
        let sx = |x: f64| LEFT + (x - x_lo) / (x_hi - x_lo).max(f64::MIN_POSITIVE) * pw;
        let sy = |y: f64| TOP + ph - (y - y_lo) / (y_hi - y_lo).max(f64::MIN_POSITIVE) * ph;
        let mut s = String::new();
        let _ = write!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
        );
        let _ = write!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
        let _ = write!(s, r#"<text x="{}" y="24" text-anchor="middle" font-size="15">{}</text>"#, LEFT + pw / 2.0, escape(&self.title));
        for &t in &y_ticks {
            let y = sy(t);
            let _ = write!(s, r##"<line x1="{LEFT}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#e0e0e0"/>"##, LEFT + pw);
            let _ = write!(s, r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text>"#, LEFT - 6.0, y + 4.0, fmt_tick(t));
        }
        for (x, label) in &x_ticks {
            let x = sx(*x);
            let _ = write!(s, r##"<line x1="{x:.1}" x2="{x:.1}" y1="{}" y2="{}" stroke="#999"/>"##, TOP + ph, TOP + ph + 5.0);
            let _ = write!(s, r#"<text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"#, TOP + ph + 19.0, escape(label));
        }
        let _ = write!(s, r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>"##);
        let _ = write!(s, r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#, LEFT + pw / 2.0, H - 12.0, escape(&self.x_label));
        let _ = write!(
            s,
            r#"<text x="16" y="{}" text-anchor="middle" transform="rotate(-90 16 {})">{}</text>"#,
            TOP + ph / 2.0,
            TOP + ph / 2.0,
            escape(&self.y_label)
        );
        for (i, series) in self.series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let path: Vec<String> = series.points.iter().map(|&(x, y)| format!("{:.1},{:.1}", sx(x), sy(y))).collect();
            let _ = write!(s, r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#, path.join(" "));
            for &(x, y) in &series.points {
                let _ = write!(
                    s,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{color}"><title>{}: {y:.2}</title></circle>"#,
                    sx(x),
                    sy(y),
                    escape(&series.name)
                );
            }
            let ly = TOP + 10.0 + 18.0 * i as f64;
            let lx = LEFT + pw + 12.0;
            let _ = write!(s, r#"<line x1="{lx}" x2="{}" y1="{ly}" y2="{ly}" stroke="{color}" stroke-width="2"/>"#, lx + 18.0);
            let _ = write!(s, r#"<text x="{}" y="{}">{}</text>"#, lx + 24.0, ly + 4.0, escape(&series.name));
        }
        s.push_str("</svg>\n");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(nice_ticks(0.0, 23.0, 6), vec![0.0, 5.0, 10.0, 15.0, 20.0, 25.0]);
        assert_eq!(nice_ticks(1.0, 10.0, 8), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        let t = nice_ticks(0.0, 0.37, 6);
        assert!(t[0] <= 0.0 && *t.last().unwrap() >= 0.37 && t.len() <= 9, "{t:?}");
        let flat = nice_ticks(3.0, 3.0, 6);
        assert!(flat.len() >= 2 && flat[0] <= 3.0 && *flat.last().unwrap() >= 3.0, "{flat:?}");
    }

    #[test]
    fn a_chart_has_one_line_per_series_inside_the_plot_area() {
        let chart = Chart {
            title: "IE <mean> & b".into(),
            x_label: "beam_width".into(),
            y_label: "IE".into(),
            x: XAxis::Numeric,
            series: vec![
                Series { name: "Flat".into(), points: vec![(1.0, 21.5), (10.0, 21.5)] },
                Series { name: "SproutRAG".into(), points: vec![(1.0, 9.0), (5.0, 12.0), (10.0, 11.0)] },
            ],
        };
        let svg = chart.svg();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 5);
        assert!(svg.contains("IE &lt;mean&gt; &amp; b") && !svg.contains("<mean>"));
        for coords in svg.split("<circle cx=\"").skip(1) {
            let x: f64 = coords.split('"').next().unwrap().parse().unwrap();
            let y: f64 = coords.split("cy=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
            assert!((LEFT..=W - RIGHT).contains(&x) && (TOP..=H - BOTTOM).contains(&y), "({x}, {y})");
        }
    }

    #[test]
    fn categories_are_evenly_spaced_and_labelled() {
        let chart = Chart {
            title: "t".into(),
            x_label: "aggregation".into(),
            y_label: "IE".into(),
            x: XAxis::Categories(vec!["uniform".into(), "learned".into()]),
            series: vec![Series { name: "s".into(), points: vec![(0.0, 1.0), (1.0, 2.0)] }],
        };
        let svg = chart.svg();
        assert!(svg.contains(">uniform</text>") && svg.contains(">learned</text>"));
    }
}
