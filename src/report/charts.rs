//! Charts as SVG text (plotters' SVG backend, rendered to a `String`; no files, no fonts).
//!
//! Invariants: the same input gives the same bytes (plotters lays text out with fixed
//! estimates, not with system fonts, and every number here is computed the same way on every
//! machine); every chart has a title and axis labels with units; and every chart stays small
//! whatever the input's size: time series are bucketed to at most [`MAX_STEPS`] steps or
//! [`MAX_BARS`] bars, per-node charts become histograms above [`MAX_NAMED_BARS`] nodes, and at
//! most [`MAX_LINES`] pools are drawn. Nothing here panics on empty or degenerate input: an
//! empty chart says "no data", and if plotters reports an error a plain SVG says so.
//! This is the only module that imports plotters.

use std::collections::BTreeMap;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{IntoSegmentedCoord, SegmentValue};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::Report;
use crate::model::time::SimDuration;
use crate::sim::PoolUsageSeries;
use crate::sim::snapshot::{NodeRow, PoolRow};

/// Steps drawn per pool in the utilisation chart; longer series are bucketed.
pub const MAX_STEPS: usize = 240;
/// Bars in a time histogram (BGP UPDATEs).
pub const MAX_BARS: usize = 200;
/// Pools drawn in the utilisation chart (the ones with the highest peak).
pub const MAX_LINES: usize = 8;
/// Per-node charts name every node up to this many nodes, and are histograms above it.
pub const MAX_NAMED_BARS: usize = 40;
/// Bins of a histogram of per-node values.
pub const MAX_BINS: usize = 60;

const WIDTH: u32 = 760;
const HEIGHT: u32 = 380;
const FONT: &str = "sans-serif";
const TITLE_SIZE: u32 = 20;
const LABEL_SIZE: u32 = 14;
/// Colours that stay distinct on white and for the common colour-vision deficiencies.
const PALETTE: [RGBColor; MAX_LINES] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x17, 0xbe, 0xcf),
];
const BAR: RGBColor = PALETTE[0];
const MUTED: RGBColor = RGBColor(0x66, 0x66, 0x66);

/// Markers labelled on a time chart; later ones are drawn as lines only.
pub const MAX_MARKER_LABELS: usize = 24;

/// A scenario event (node down, link down, apply, scale, …) drawn on every time chart as a
/// dashed vertical line with a label, so what happened after it can be read off.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Marker {
    pub time_us: u64,
    pub label: String,
}

/// One chart, as written next to `report.json` and inlined in `report.html`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chart {
    pub file: &'static str,
    pub title: &'static str,
    pub svg: String,
}

/// What the charts are drawn from. The BGP series are `None` until the BGP layer provides
/// them; their charts are then left out rather than drawn empty.
#[derive(Clone, Copy, Debug)]
pub struct ChartInputs<'a> {
    pub pool_usage: &'a PoolUsageSeries,
    pub end_us: u64,
    pub pools: &'a [PoolRow],
    pub nodes: &'a [NodeRow],
    /// UPDATE messages sent, as (time in µs, count) in any order.
    pub bgp_updates: Option<&'a [(u64, u64)]>,
    /// Loc-RIB routes per node (or router), by name.
    pub rib_sizes: Option<&'a [(String, u64)]>,
    /// The scenario's events, in time order, for the time charts.
    pub markers: &'a [Marker],
}

impl<'a> ChartInputs<'a> {
    /// The inputs a report and its pool usage series give; no BGP data yet.
    pub fn new(report: &'a Report, pool_usage: &'a PoolUsageSeries) -> ChartInputs<'a> {
        ChartInputs {
            pool_usage,
            end_us: report.end_time_us,
            pools: &report.pools,
            nodes: &report.nodes,
            bgp_updates: None,
            rib_sizes: None,
            markers: &[],
        }
    }
}

/// Every chart the inputs allow, in the order the report shows them.
pub fn render(inputs: &ChartInputs<'_>) -> Vec<Chart> {
    let mut charts = vec![
        Chart {
            file: "pool-utilisation.svg",
            title: "Pool utilisation over time",
            svg: pool_utilisation(
                inputs.pool_usage,
                inputs.pools,
                inputs.end_us,
                inputs.markers,
            ),
        },
        Chart {
            file: "pods-per-node.svg",
            title: "Pods per node",
            svg: pods_per_node(inputs.nodes),
        },
    ];
    if let Some(updates) = inputs.bgp_updates {
        charts.push(Chart {
            file: "bgp-updates.svg",
            title: "BGP UPDATEs over time",
            svg: bgp_updates(updates, inputs.end_us, inputs.markers),
        });
    }
    if let Some(sizes) = inputs.rib_sizes {
        charts.push(Chart {
            file: "rib-size.svg",
            title: "Loc-RIB size per node",
            svg: rib_size_per_node(sizes),
        });
    }
    charts
}

/// (a) Pod addresses held in each pool over time, as a share of the pool's capacity: the
/// pool table's "pods" column, tunnel addresses not counted (they are in its "allocated").
/// Pools of unknown or zero capacity are left out; the line is a step function that holds
/// each count until the next change and extends to `end_us`. The time axis is the one
/// [`bgp_updates`] draws: `0..end_us`, with the same markers.
pub fn pool_utilisation(
    usage: &PoolUsageSeries,
    pools: &[PoolRow],
    end_us: u64,
    markers: &[Marker],
) -> String {
    // Pools in the report's order (the pool table's), with their capacity.
    let capacity: BTreeMap<&str, (usize, u128)> = pools
        .iter()
        .enumerate()
        .map(|(order, p)| (p.name.as_str(), (order, p.capacity)))
        .collect();
    let last_sample = usage.samples.last().map_or(0, |s| s.time_us);
    let end_us = end_us.max(last_sample).max(1);
    let times: Vec<u64> = usage.samples.iter().map(|s| s.time_us).collect();

    // (order, name, capacity, steps as (time µs, percent), peak percent)
    let mut lines = Vec::new();
    for (i, name) in usage.pools.iter().enumerate() {
        let Some(&(order, cap)) = capacity.get(name.as_str()) else {
            continue;
        };
        if cap == 0 {
            continue;
        }
        let counts: Vec<u64> = usage
            .samples
            .iter()
            .map(|s| s.allocated.get(i).copied().unwrap_or(0))
            .collect();
        let steps: Vec<(u64, f64)> = bucket_steps(&times, &counts, end_us)
            .into_iter()
            .map(|(t, v)| (t, v as f64 * 100.0 / cap as f64))
            .collect();
        let peak = steps.iter().map(|s| s.1).fold(0.0, f64::max);
        lines.push((order, name.as_str(), cap, steps, peak));
    }
    lines.sort_by_key(|l| l.0);
    let pools_with_capacity = lines.len();
    if lines.len() > MAX_LINES {
        let mut by_peak: Vec<usize> = (0..lines.len()).collect();
        by_peak.sort_by(|&a, &b| lines[b].4.total_cmp(&lines[a].4).then(a.cmp(&b)));
        let keep: Vec<bool> = {
            let mut keep = vec![false; lines.len()];
            for &i in by_peak.iter().take(MAX_LINES) {
                keep[i] = true;
            }
            keep
        };
        let mut i = 0;
        lines.retain(|_| {
            i += 1;
            keep[i - 1]
        });
    }
    let title = if pools_with_capacity > MAX_LINES {
        format!("Pool utilisation over time ({MAX_LINES} fullest of {pools_with_capacity} pools)")
    } else {
        "Pool utilisation over time".to_string()
    };
    let peak = lines.iter().map(|l| l.4).fold(0.0, f64::max);
    // Room above the lines for the legend and the markers' labels.
    let headroom = if markers.is_empty() { 1.3 } else { 1.6 };
    let y_max = nice_ceiling(peak * headroom).clamp(1.0, 100.0).max(peak);
    let end_s = end_us as f64 / 1e6;
    let empty = lines.is_empty();

    svg(WIDTH, HEIGHT, &title, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(&title, (FONT, TITLE_SIZE))
            .margin(14)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..end_s, 0.0..y_max)?;
        let y_decimals = if y_max >= 10.0 { 0 } else { 1 };
        chart
            .configure_mesh()
            .x_desc("simulated time (s)")
            .y_desc("pods' addresses (% of pool capacity)")
            .x_label_formatter(&|x| seconds(*x, end_s))
            .y_label_formatter(&|y| format!("{y:.y_decimals$}%"))
            .axis_desc_style((FONT, LABEL_SIZE))
            .label_style((FONT, LABEL_SIZE - 2))
            .light_line_style(WHITE.mix(0.0))
            .bold_line_style(BLACK.mix(0.08))
            .draw()?;
        draw_markers(&mut chart, markers, end_s, y_max)?;
        // Every other pool is dashed, so pools with the same usage stay visible on top of
        // each other.
        for (k, (_, name, cap, steps, _)) in lines.iter().enumerate() {
            let colour = PALETTE[k % PALETTE.len()];
            let style = colour.stroke_width(2);
            let points: Vec<(f64, f64)> = steps.iter().map(|&(t, p)| (t as f64 / 1e6, p)).collect();
            let label = format!("{name} (capacity {})", super::sections::count(*cap));
            if k % 2 == 0 {
                chart
                    .draw_series(LineSeries::new(points, style))?
                    .label(label)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style));
            } else {
                chart
                    .draw_series(DashedLineSeries::new(points, 7, 5, style))?
                    .label(label)
                    .legend(move |(x, y)| {
                        plotters::element::DashedPathElement::new(
                            vec![(x, y), (x + 18, y)],
                            7,
                            5,
                            style,
                        )
                    });
            }
        }
        if empty {
            no_data(root, "no pool with a capacity has allocated addresses")?;
        } else {
            // Below the markers' three rows of labels when there are markers.
            let position = if markers.is_empty() {
                SeriesLabelPosition::UpperLeft
            } else {
                SeriesLabelPosition::Coordinate(8, 50)
            };
            chart
                .configure_series_labels()
                .position(position)
                .label_font((FONT, LABEL_SIZE - 1))
                .background_style(WHITE.mix(0.9))
                .border_style(BLACK.mix(0.3))
                .draw()?;
        }
        Ok(())
    })
}

/// A step function through `(times[k], counts[k])`, starting at 0 at time 0 and holding the
/// last count until `end_us`. With more than [`MAX_STEPS`] samples, time is cut into
/// [`MAX_STEPS`] equal buckets and each bucket shows the highest count it held, so a short
/// peak is never hidden.
fn bucket_steps(times: &[u64], counts: &[u64], end_us: u64) -> Vec<(u64, u64)> {
    let mut steps = vec![(0, 0)];
    let mut push = |t: u64, v: u64| {
        let previous = steps.last().map_or(0, |s| s.1);
        steps.push((t, previous));
        steps.push((t, v));
    };
    if times.len() <= MAX_STEPS {
        for (&t, &v) in times.iter().zip(counts) {
            push(t, v);
        }
    } else {
        let width = end_us.div_ceil(MAX_STEPS as u64).max(1);
        let mut carry = 0;
        let mut k = 0;
        for b in 0..MAX_STEPS as u64 {
            let start = b.saturating_mul(width);
            let stop = start.saturating_add(width);
            let mut high = carry;
            let mut seen = false;
            while k < times.len() && (times[k] < stop || b + 1 == MAX_STEPS as u64) {
                high = high.max(counts[k]);
                carry = counts[k];
                seen = true;
                k += 1;
            }
            if seen {
                push(start, high);
            }
        }
    }
    let last = steps.last().map_or(0, |s| s.1);
    steps.push((end_us, last));
    steps
}

/// (b) Pods per node: one named bar per node up to [`MAX_NAMED_BARS`] nodes, a histogram of
/// pods-per-node above.
pub fn pods_per_node(nodes: &[NodeRow]) -> String {
    if nodes.len() <= MAX_NAMED_BARS {
        let items: Vec<(String, u64)> = nodes
            .iter()
            .map(|n| (n.name.clone(), n.pods as u64))
            .collect();
        named_bars(
            &format!("Pods per node ({} nodes)", nodes.len()),
            "pods on the node",
            &items,
        )
    } else {
        let values: Vec<u64> = nodes.iter().map(|n| n.pods as u64).collect();
        histogram(
            &format!(
                "Pods per node (histogram of {} nodes)",
                super::sections::count(nodes.len())
            ),
            "pods on a node",
            &values,
        )
    }
}

/// (d) Loc-RIB size per node: named bars up to [`MAX_NAMED_BARS`] nodes, a histogram above.
pub fn rib_size_per_node(sizes: &[(String, u64)]) -> String {
    if sizes.len() <= MAX_NAMED_BARS {
        named_bars(
            &format!("Loc-RIB size per node ({} nodes)", sizes.len()),
            "routes in the Loc-RIB",
            sizes,
        )
    } else {
        let values: Vec<u64> = sizes.iter().map(|s| s.1).collect();
        histogram(
            &format!(
                "Loc-RIB size per node (histogram of {} nodes)",
                super::sections::count(sizes.len())
            ),
            "routes in a node's Loc-RIB",
            &values,
        )
    }
}

/// (c) BGP UPDATE messages over time, summed into at most [`MAX_BARS`] buckets whose width
/// is 1, 2 or 5 times a power of ten microseconds, on the time axis of [`pool_utilisation`]
/// (`0..end_us`, or to the last UPDATE if later) with the same markers.
pub fn bgp_updates(points: &[(u64, u64)], end_us: u64, markers: &[Marker]) -> String {
    let last = points.iter().map(|p| p.0).max().unwrap_or(0);
    let end_us = end_us.max(last).max(1);
    let width = bucket_width(end_us, MAX_BARS as u64);
    let n = usize::try_from(end_us / width + 1).unwrap_or(MAX_BARS);
    let mut buckets = vec![0u64; n];
    for &(t, c) in points {
        let b = usize::try_from(t / width).unwrap_or(0).min(n - 1);
        buckets[b] = buckets[b].saturating_add(c);
    }
    let total = points.iter().map(|p| p.1).fold(0u64, u64::saturating_add);
    let title = format!(
        "BGP UPDATE messages over time ({} in total)",
        super::sections::count(total)
    );
    let y_desc = format!("UPDATEs per {}", SimDuration::from_micros(width));
    let width_s = width as f64 / 1e6;
    let end_s = end_us as f64 / 1e6;
    let high = buckets.iter().copied().max().unwrap_or(0) as f64;
    let headroom = if markers.is_empty() { 1.1 } else { 1.5 };
    let y_max = nice_ceiling(high * headroom).max(1.0);

    svg(WIDTH, HEIGHT, &title, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(&title, (FONT, TITLE_SIZE))
            .margin(14)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..end_s, 0.0..y_max)?;
        chart
            .configure_mesh()
            .x_desc("simulated time (s)")
            .y_desc(y_desc.as_str())
            .x_label_formatter(&|x| seconds(*x, end_s))
            .y_label_formatter(&|y| integer(*y))
            .axis_desc_style((FONT, LABEL_SIZE))
            .label_style((FONT, LABEL_SIZE - 2))
            .light_line_style(WHITE.mix(0.0))
            .bold_line_style(BLACK.mix(0.08))
            .disable_x_mesh()
            .draw()?;
        draw_markers(&mut chart, markers, end_s, y_max)?;
        chart.draw_series(
            buckets
                .iter()
                .enumerate()
                .filter(|b| *b.1 > 0)
                .map(|(b, &c)| {
                    let x0 = b as f64 * width_s;
                    let x1 = (x0 + width_s).min(end_s);
                    Rectangle::new([(x0, 0.0), (x1, c as f64)], BAR.filled())
                }),
        )?;
        if total == 0 {
            no_data(root, "no UPDATE messages")?;
        }
        Ok(())
    })
}

type TimeChart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// The scenario's events as dashed vertical lines, the first [`MAX_MARKER_LABELS`] labelled
/// at the top in three staggered rows so neighbouring labels do not overwrite each other.
fn draw_markers(
    chart: &mut TimeChart<'_, '_>,
    markers: &[Marker],
    end_s: f64,
    y_max: f64,
) -> Drawn {
    let colour = RGBColor(0x6a, 0x3d, 0x9a);
    for (i, m) in markers.iter().enumerate() {
        let t = (m.time_us as f64 / 1e6).min(end_s);
        chart.draw_series(DashedLineSeries::new(
            vec![(t, 0.0), (t, y_max)],
            4,
            3,
            colour.mix(0.7).stroke_width(1),
        ))?;
        if i < MAX_MARKER_LABELS {
            // Labels right of their line, or left of it in the last quarter of the axis.
            let right = t < end_s * 0.75;
            let (dx, h) = if right {
                (3, HPos::Left)
            } else {
                (-3, HPos::Right)
            };
            let dy = 3 + 14 * (i % 3) as i32;
            chart.plotting_area().draw(
                &(EmptyElement::at((t, y_max))
                    + Text::new(
                        shorten(&m.label, 34),
                        (dx, dy),
                        label_style(LABEL_SIZE - 3, &colour, h, VPos::Top),
                    )),
            )?;
        }
    }
    Ok(())
}

/// Horizontal bars, one per item, first item on top; the chart grows with the items.
fn named_bars(title: &str, value_desc: &str, items: &[(String, u64)]) -> String {
    let n = items.len();
    let height = (110 + 24 * n as u32).max(220);
    let names: Vec<String> = items.iter().map(|i| shorten(&i.0, 28)).collect();
    let longest = names.iter().map(|s| s.chars().count()).max().unwrap_or(0) as u32;
    let label_area = (longest * 8 + 16).clamp(60, 240);
    let high = items.iter().map(|i| i.1).max().unwrap_or(0) as f64;
    let x_max = nice_ceiling(high * 1.15).max(1.0);

    svg(WIDTH, height, title, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FONT, TITLE_SIZE))
            .margin(14)
            .x_label_area_size(44)
            .y_label_area_size(label_area)
            .build_cartesian_2d(0.0..x_max, (0..n.saturating_sub(1)).into_segmented())?;
        // Row r (from the bottom) shows item n - 1 - r.
        let name_of = |v: &SegmentValue<usize>| match v {
            SegmentValue::CenterOf(r) | SegmentValue::Exact(r) => n
                .checked_sub(r + 1)
                .and_then(|i| names.get(i))
                .cloned()
                .unwrap_or_default(),
            SegmentValue::Last => String::new(),
        };
        chart
            .configure_mesh()
            .x_desc(value_desc)
            .x_label_formatter(&|x| integer(*x))
            .y_label_formatter(&name_of)
            .y_labels(n)
            .axis_desc_style((FONT, LABEL_SIZE))
            .label_style((FONT, LABEL_SIZE - 2))
            .light_line_style(WHITE.mix(0.0))
            .bold_line_style(BLACK.mix(0.08))
            .disable_y_mesh()
            .draw()?;
        chart.draw_series(items.iter().enumerate().map(|(i, (_, v))| {
            let r = n - 1 - i;
            let mut bar = Rectangle::new(
                [
                    (0.0, SegmentValue::Exact(r)),
                    (*v as f64, SegmentValue::Exact(r + 1)),
                ],
                BAR.filled(),
            );
            bar.set_margin(4, 4, 0, 0);
            bar
        }))?;
        chart.draw_series(items.iter().enumerate().map(|(i, (_, v))| {
            let r = n - 1 - i;
            // The count just right of its bar, 4 pixels clear of it.
            EmptyElement::at((*v as f64, SegmentValue::CenterOf(r)))
                + Text::new(
                    v.to_string(),
                    (4, 0),
                    label_style(LABEL_SIZE - 2, &MUTED, HPos::Left, VPos::Center),
                )
        }))?;
        if n == 0 {
            no_data(root, "no nodes")?;
        }
        Ok(())
    })
}

/// How many items have each value, in at most [`MAX_BINS`] bins of equal integer width.
fn histogram(title: &str, value_desc: &str, values: &[u64]) -> String {
    let high = values.iter().copied().max().unwrap_or(0);
    let width = high.div_ceil(MAX_BINS as u64).max(1);
    // `high / width < MAX_BINS`, so this always fits.
    let n = usize::try_from(high / width + 1).unwrap_or(MAX_BINS);
    let mut bins = vec![0u64; n];
    for &v in values {
        let b = usize::try_from(v / width).unwrap_or(0).min(n - 1);
        bins[b] += 1;
    }
    let x_min = -0.5;
    let x_max = (n as f64) * width as f64 - 0.5;
    let y_max = nice_ceiling(bins.iter().copied().max().unwrap_or(0) as f64 * 1.1).max(1.0);
    let x_desc = if width == 1 {
        value_desc.to_string()
    } else {
        format!("{value_desc} (bins of {width})")
    };

    svg(WIDTH, HEIGHT, title, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FONT, TITLE_SIZE))
            .margin(14)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(x_min..x_max, 0.0..y_max)?;
        chart
            .configure_mesh()
            .x_desc(x_desc.as_str())
            .y_desc("nodes")
            .x_label_formatter(&|x| integer(*x))
            .y_label_formatter(&|y| integer(*y))
            .axis_desc_style((FONT, LABEL_SIZE))
            .label_style((FONT, LABEL_SIZE - 2))
            .light_line_style(WHITE.mix(0.0))
            .bold_line_style(BLACK.mix(0.08))
            .disable_x_mesh()
            .draw()?;
        chart.draw_series(bins.iter().enumerate().filter(|b| *b.1 > 0).map(|(b, &c)| {
            let x0 = (b as u64 * width) as f64 - 0.5;
            let mut bar = Rectangle::new([(x0, 0.0), (x0 + width as f64, c as f64)], BAR.filled());
            bar.set_margin(0, 0, 1, 1);
            bar
        }))?;
        // Counts above the bars, so a bin of one node is seen beside a bin of thousands.
        chart.draw_series(bins.iter().enumerate().filter(|b| *b.1 > 0).map(|(b, &c)| {
            let middle = (b as u64 * width) as f64 - 0.5 + width as f64 / 2.0;
            EmptyElement::at((middle, c as f64))
                + Text::new(
                    c.to_string(),
                    (0, -3),
                    label_style(LABEL_SIZE - 3, &MUTED, HPos::Center, VPos::Bottom),
                )
        }))?;
        if values.is_empty() {
            no_data(root, "no nodes")?;
        }
        Ok(())
    })
}

/// One variant of a sweep, as [`sweep_tradeoff`] draws it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepPoint {
    /// The values the variant sets, such as `blockSize=26 maxBlocksPerHost=3`.
    pub label: String,
    /// The largest FIB of any node.
    pub routes: u64,
    pub pending: u64,
    /// Every expectation of the variant holds.
    pub passed: bool,
}

/// Points of a sweep chart that carry their label; beyond, labels would only overlap.
pub const MAX_LABELLED_POINTS: usize = 40;

/// A sweep's trade-off: one point per variant, the largest FIB of a node across, Pending pods
/// up (what a smaller block buys in routes and costs in addresses); a filled green point holds
/// its expectations, a red ring does not.
pub fn sweep_tradeoff(points: &[SweepPoint]) -> String {
    let title = format!(
        "Sweep: routes per node vs Pending pods ({} variants)",
        super::sections::count(points.len())
    );
    let x_max = nice_ceiling(points.iter().map(|p| p.routes).max().unwrap_or(0) as f64 * 1.15);
    let y_max = nice_ceiling(points.iter().map(|p| p.pending).max().unwrap_or(0) as f64 * 1.15);
    let pass = PALETTE[2];
    let fail = PALETTE[1];
    svg(WIDTH, HEIGHT, &title, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(&title, (FONT, TITLE_SIZE))
            .margin(14)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
        chart
            .configure_mesh()
            .x_desc("routes in the largest FIB of a node")
            .y_desc("Pending pods")
            .x_label_formatter(&|x| integer(*x))
            .y_label_formatter(&|y| integer(*y))
            .axis_desc_style((FONT, LABEL_SIZE))
            .label_style((FONT, LABEL_SIZE - 2))
            .light_line_style(WHITE.mix(0.0))
            .bold_line_style(BLACK.mix(0.08))
            .draw()?;
        chart.draw_series(points.iter().map(|p| {
            let style = if p.passed {
                pass.filled()
            } else {
                fail.stroke_width(2)
            };
            Circle::new((p.routes as f64, p.pending as f64), 5, style)
        }))?;
        if points.len() <= MAX_LABELLED_POINTS {
            chart.draw_series(points.iter().map(|p| {
                EmptyElement::at((p.routes as f64, p.pending as f64))
                    + Text::new(
                        shorten(&p.label, 40),
                        (8, -4),
                        label_style(LABEL_SIZE - 3, &MUTED, HPos::Left, VPos::Bottom),
                    )
            }))?;
        }
        if points.is_empty() {
            no_data(root, "no variants")?;
        }
        Ok(())
    })
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Drawn = Result<(), DrawingAreaErrorKind<std::io::Error>>;

/// Renders `draw` on a white canvas; if plotters fails, a plain SVG naming the chart.
fn svg(width: u32, height: u32, title: &str, draw: impl FnOnce(&Area<'_>) -> Drawn) -> String {
    let mut out = String::new();
    let drawn = {
        let root = SVGBackend::with_string(&mut out, (width, height)).into_drawing_area();
        root.fill(&WHITE)
            .and_then(|()| draw(&root))
            .and_then(|()| root.present())
    };
    match drawn {
        Ok(()) => out,
        Err(e) => fallback(width, height, title, &e.to_string()),
    }
}

fn fallback(width: u32, height: u32, title: &str, error: &str) -> String {
    let text = super::markup::escape;
    format!(
        "<svg width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" \
         xmlns=\"http://www.w3.org/2000/svg\">\n<rect width=\"100%\" height=\"100%\" fill=\"#FFFFFF\"/>\n\
         <text x=\"{}\" y=\"30\" text-anchor=\"middle\" font-family=\"{FONT}\" font-size=\"16\">{}</text>\n\
         <text x=\"{}\" y=\"60\" text-anchor=\"middle\" font-family=\"{FONT}\" font-size=\"12\">chart not drawn: {}</text>\n</svg>\n",
        width / 2,
        text(title),
        width / 2,
        text(error)
    )
}

/// A grey note in the middle of an empty chart.
/// The style of a chart's small texts: the chart font at `size` in `colour`, anchored at
/// (`h`, `v`) of the point it is drawn at.
fn label_style(size: u32, colour: &RGBColor, h: HPos, v: VPos) -> TextStyle<'static> {
    (FONT, size).into_font().color(colour).pos(Pos::new(h, v))
}

fn no_data(root: &Area<'_>, message: &str) -> Drawn {
    let (w, h) = root.dim_in_pixel();
    root.draw(&Text::new(
        message.to_string(),
        ((w / 2) as i32, (h / 2) as i32),
        label_style(LABEL_SIZE + 2, &MUTED, HPos::Center, VPos::Center),
    ))
}

/// The smallest "round" number (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of ten)
/// that is ≥ `x`; 1 for `x` ≤ 0.
fn nice_ceiling(x: f64) -> f64 {
    if !x.is_finite() || x <= 0.0 {
        return 1.0;
    }
    let mut scale = 10f64.powi(x.log10().floor() as i32);
    loop {
        for m in [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0] {
            if m * scale >= x {
                return m * scale;
            }
        }
        scale *= 10.0;
    }
}

/// The smallest 1-2-5 width (µs) that cuts `0..=last` into at most `max` buckets.
fn bucket_width(last: u64, max: u64) -> u64 {
    let mut scale: u64 = 1;
    loop {
        for m in [1, 2, 5] {
            let w = scale.saturating_mul(m);
            if last / w < max || w == u64::MAX {
                return w;
            }
        }
        scale = scale.saturating_mul(10);
    }
}

/// A time axis label in seconds, with as many decimals as the axis' ticks (about a tenth of
/// the span apart) need.
fn seconds(x: f64, span: f64) -> String {
    let step = span / 10.0;
    let decimals = if step.is_finite() && step > 0.0 {
        (-step.log10()).ceil().clamp(0.0, 6.0) as usize
    } else {
        0
    };
    format!("{x:.decimals$}")
}

/// An axis label for a count: blank between integers, so a small range shows no "0.5 pods".
fn integer(x: f64) -> String {
    if (x - x.round()).abs() < 1e-9 {
        format!("{}", x.round() as i64)
    } else {
        String::new()
    }
}

fn shorten(name: &str, max: usize) -> String {
    if name.chars().count() <= max {
        name.to_string()
    } else {
        let mut s: String = name.chars().take(max - 1).collect();
        s.push('…');
        s
    }
}

#[cfg(test)]
mod tests;
