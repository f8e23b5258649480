use super::*;
use crate::sim::PoolUsageSample;

fn node(name: &str, pods: usize) -> NodeRow {
    NodeRow {
        name: name.to_string(),
        zone: "z".to_string(),
        rack: "r".to_string(),
        ip: "10.0.0.2".to_string(),
        os: "linux",
        up: true,
        max_pods: 110,
        pods,
        blocks: Vec::new(),
        borrowed_ips: 0,
        rib_routes: None,
        fib_routes: 0,
        updates_sent: None,
        updates_received: None,
    }
}

fn pool(name: &str, capacity: u128) -> PoolRow {
    PoolRow {
        name: name.to_string(),
        kind: "calico",
        cidr: "10.244.0.0/16".parse().expect("a prefix"),
        block_size: Some(26),
        capacity,
        allocated: 0,
        reserved: 0,
        blocks: 0,
        free: capacity,
        mtu: 1480,
    }
}

fn well_formed(svg: &str) {
    assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(80)]);
    assert!(svg.trim_end().ends_with("</svg>"));
    assert!(!svg.contains("NaN"), "NaN in chart");
    assert!(!svg.contains("chart not drawn"), "plotters failed");
}

#[test]
fn nice_numbers() {
    assert_eq!(nice_ceiling(0.0), 1.0);
    assert_eq!(nice_ceiling(f64::NAN), 1.0);
    assert_eq!(nice_ceiling(0.78), 0.8);
    assert_eq!(nice_ceiling(1.3), 1.5);
    assert_eq!(nice_ceiling(2.1), 2.5);
    assert_eq!(nice_ceiling(37.0), 40.0);
    assert_eq!(nice_ceiling(5494.5), 6000.0);
    assert_eq!(nice_ceiling(1000.0), 1000.0);
    assert_eq!(bucket_width(0, 200), 1);
    assert_eq!(bucket_width(199, 200), 1);
    assert_eq!(bucket_width(200, 200), 2);
    assert_eq!(bucket_width(120_000_000, 200), 1_000_000);
    assert_eq!(bucket_width(u64::MAX, 200), 100_000_000_000_000_000);
    assert_eq!(integer(3.0), "3");
    assert_eq!(seconds(60.0, 120.0), "60");
    assert_eq!(seconds(0.05, 0.32), "0.05");
    assert_eq!(seconds(0.5, 2.0), "0.5");
    assert_eq!(seconds(0.0, 0.0), "0");
    assert_eq!(integer(2.5), "");
}

#[test]
fn empty_inputs_draw_titled_empty_charts() {
    let usage = PoolUsageSeries::default();
    for svg in [
        pool_utilisation(&usage, &[], 0, &[]),
        pods_per_node(&[]),
        bgp_updates(&[], 0, &[]),
        rib_size_per_node(&[]),
    ] {
        well_formed(&svg);
        assert!(svg.contains("no "), "no 'no data' note");
    }
    // A pool of zero capacity is not drawn and does not divide by zero.
    let usage = PoolUsageSeries {
        pools: vec!["zero".to_string()],
        samples: vec![PoolUsageSample {
            time_us: 5,
            allocated: vec![3],
        }],
    };
    well_formed(&pool_utilisation(&usage, &[pool("zero", 0)], 5, &[]));
}

#[test]
fn charts_have_titles_and_axis_units() {
    let usage = PoolUsageSeries {
        pools: vec!["a".to_string(), "b".to_string()],
        samples: (0..10)
            .map(|k| PoolUsageSample {
                time_us: k * 1_000_000,
                allocated: vec![k * 10, k],
            })
            .collect(),
    };
    let svg = pool_utilisation(&usage, &[pool("a", 256), pool("b", 1024)], 12_000_000, &[]);
    well_formed(&svg);
    assert!(svg.contains("Pool utilisation over time"));
    assert!(svg.contains("simulated time (s)"));
    assert!(svg.contains("% of pool capacity"));
    assert!(svg.contains("a (capacity 256)"));
    assert!(svg.contains("<polyline"));

    let svg = bgp_updates(&[(2_000, 5), (1_000, 3), (150_000, 1)], 0, &[]);
    well_formed(&svg);
    assert!(svg.contains("9 in total"));
    assert!(svg.contains("UPDATEs per 1ms"));
    assert!(svg.contains("<rect"));

    let svg = rib_size_per_node(&[("n1".to_string(), 12), ("n2".to_string(), 40)]);
    well_formed(&svg);
    assert!(svg.contains("n1") && svg.contains("routes in the Loc-RIB"));
}

#[test]
fn large_inputs_are_aggregated_into_small_files() {
    let nodes: Vec<NodeRow> = (0..5000)
        .map(|i| node(&format!("node-{i}"), (i * 7919) % 111))
        .collect();
    let svg = pods_per_node(&nodes);
    well_formed(&svg);
    assert!(svg.contains("histogram of 5,000 nodes"));
    assert!(!svg.contains("node-4999"));
    assert!(svg.len() < 40_000, "{} bytes", svg.len());

    let sizes: Vec<(String, u64)> = (0..5000)
        .map(|i| (format!("node-{i}"), 150_000 + (i as u64 % 977)))
        .collect();
    let svg = rib_size_per_node(&sizes);
    well_formed(&svg);
    assert!(svg.contains("bins of"));
    assert!(svg.len() < 40_000, "{} bytes", svg.len());

    let updates: Vec<(u64, u64)> = (0..200_000).map(|i| (i * 37, 1 + i % 3)).collect();
    let svg = bgp_updates(&updates, 0, &[]);
    well_formed(&svg);
    assert!(svg.matches("<rect").count() <= MAX_BARS + 10);
    assert!(svg.len() < 60_000, "{} bytes", svg.len());

    let pools: Vec<PoolRow> = (0..20).map(|p| pool(&format!("p{p}"), 4096)).collect();
    let usage = PoolUsageSeries {
        pools: pools.iter().map(|p| p.name.clone()).collect(),
        samples: (0..100_000u64)
            .map(|k| PoolUsageSample {
                time_us: k * 10_000,
                allocated: (0..20).map(|p| (k / 50 + p) % 4000).collect(),
            })
            .collect(),
    };
    let svg = pool_utilisation(&usage, &pools, 1_000_000_000, &[]);
    well_formed(&svg);
    assert!(svg.contains("8 fullest of 20 pools"));
    assert_eq!(svg.matches("(capacity 4,096)").count(), MAX_LINES);
    assert!(svg.len() < 120_000, "{} bytes", svg.len());
}

#[test]
fn bucketing_keeps_peaks_and_ends_at_the_end() {
    let times: Vec<u64> = (0..1000).collect();
    let mut counts = vec![1u64; 1000];
    counts[500] = 99;
    let steps = bucket_steps(&times, &counts, 2000);
    assert!(steps.len() <= 2 * MAX_STEPS + 2);
    assert!(steps.iter().any(|s| s.1 == 99));
    assert_eq!(steps.last(), Some(&(2000, 1)));
    assert_eq!(bucket_steps(&[], &[], 10), vec![(0, 0), (10, 0)]);
}

#[test]
fn same_input_same_bytes() {
    let nodes: Vec<NodeRow> = (0..12).map(|i| node(&format!("n{i}"), i)).collect();
    assert_eq!(pods_per_node(&nodes), pods_per_node(&nodes));
    let updates = [(10u64, 2u64), (20, 3)];
    assert_eq!(
        bgp_updates(&updates, 30, &[]),
        bgp_updates(&updates, 30, &[])
    );
}
