//! `foliosim bench --quick` runs every row and its fields are sane (not timed).

use foliosim_lab::bench::{cases, format_row, header, run_case};

#[test]
fn quick_bench_runs_every_row_with_sane_fields() {
    let cases = cases(true);
    assert!(cases.len() >= 4);
    println!("{}", header());
    for case in &cases {
        let row = run_case(case).unwrap();
        println!("{}", format_row(&row));
        assert!(row.steps > 0, "{}", row.name);
        assert!(row.wall_s > 0.0 && row.simulated_s > 0.0, "{}", row.name);
        assert!(row.steps_per_s().is_finite() && row.simulated_per_wall().is_finite());
        assert!(row.steps_per_cpu_s() > 0.0 && row.simulated_per_cpu() > 0.0);
        if let Some(cpu) = row.cpu_s {
            assert!(cpu > 0.0 && cpu < 3600.0, "{}: {cpu} CPU s", row.name);
        }
        assert!(row.base_pages >= case.scenario.machine.memory.0 / 4096);
        let est = row.estimate_bytes_per_page();
        assert!(est > 1.0 && est < 1000.0, "{}: {est} B/page", row.name);
        if let Some(rss) = row.peak_rss_bytes {
            assert!(rss > 0);
        }
        // The name, then ten figures.
        let line = format_row(&row);
        assert!(line.starts_with(&row.name));
        assert_eq!(
            line[row.name.len()..].split_whitespace().count(),
            10,
            "{line}"
        );
    }
    // The 1 TiB machine at full scale is what the suite names.
    let full = foliosim_lab::bench::usemem_1t_64k(1.0);
    assert_eq!(full.machine.memory.0, 1 << 40);
    assert_eq!(full.machine.cpus, 128);
}
