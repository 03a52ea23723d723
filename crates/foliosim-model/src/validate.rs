//! Validation: the schema's field checks (scenario.rs) and, between them, the checks that need
//! the model: hw's TLB geometries and machine profiles, the swap map's clusters, xsbench's
//! grids, the trace reader, and the host-footprint estimate.
//!
//! It sits above the schema so that the schema is plain data naming nothing of hw/, mm/ or
//! workload/ (scenario/ has a test for that). The steps run in the order they always ran, so
//! a scenario with two mistakes is still refused for the same one.

use crate::hw::profile::DEFAULT as DEFAULT_PROFILE;
use crate::mm::swapfile::{MAX_SWAPFILES, SWAPFILE_CLUSTER};
use crate::scenario::{
    format_size, invalid, KbuildSpec, RegisteredSpec, Scenario, ScenarioError, TlbKind,
    WorkloadSpec, XsbenchSpec, PAGE_SIZE,
};

impl Scenario {
    /// Parse `text` and check it all (`validate`).
    pub fn from_toml_str(text: &str) -> Result<Scenario, ScenarioError> {
        let scenario: Scenario = toml::from_str(text)?;
        scenario.validate()?;
        Ok(scenario)
    }

    /// Checks what serde's types cannot: ranges, cross references, known names, and what the
    /// model can hold.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        self.check_machine_fields()?;
        crate::hw::tlb_cache::TlbGeometry::from_spec(
            self.machine.tlb_geometry.as_ref(),
            self.machine.tlb,
        )
        .map_err(|(field, value, allowed)| invalid(field, value, allowed))?;
        self.check_accelerators()?;
        check_machine_profile(self)?;
        check_node_sockets(self)?;
        check_swap_devices(self)?;
        self.check_costs()?;
        self.validate_host_knobs()?;
        self.check_sysfs()?;
        check_lru_policy(self)?;
        self.check_memcgs()?;
        self.check_files_and_workloads()?;
        for (i, w) in self.workloads.iter().enumerate() {
            self.check_workload_fields(i, w)?;
            check_workload_in_model(self, i, w)?;
            self.check_workload_refs(i, w)?;
        }
        check_footprint(self)
    }
}

/// `machine.profile`, `[machine.topology]` and `machine.kvm_guest`.
fn check_machine_profile(s: &Scenario) -> Result<(), ScenarioError> {
    let m = &s.machine;
    let name = m.profile.as_deref().unwrap_or(DEFAULT_PROFILE);
    let profile = crate::hw::profile::resolve(name)
        .map_err(|allowed| invalid("machine.profile", name, allowed))?;
    if let Some(tlb) = profile.tlb.filter(|&t| t != m.tlb) {
        let name = |t: TlbKind| match t {
            TlbKind::X86Ipi => "x86-ipi",
            TlbKind::Arm64Tlbi => "arm64-tlbi",
        };
        return Err(invalid(
            "machine.tlb",
            name(m.tlb),
            format!(
                "{} (the architecture of profile {})",
                name(tlb),
                profile.name
            ),
        ));
    }
    if let Some(t) = &m.topology {
        t.check()?;
    }
    if let Some(t) = m.topology_spec() {
        if m.cpus > t.cpus() {
            return Err(invalid(
                "machine.cpus",
                m.cpus,
                format!("1 ..= {} (the topology's CPUs)", t.cpus()),
            ));
        }
    }
    if m.kvm_guest && (profile.name == DEFAULT_PROFILE || m.tlb != TlbKind::X86Ipi) {
        return Err(invalid(
            "machine.kvm_guest",
            true,
            "false with profile this-vm (its costs were measured in its guest) or tlb arm64-tlbi (no IPI flushes)",
        ));
    }
    Ok(())
}

/// `machine.node[i].socket`: with any, every socket of the topology but socket 0 (node 0's)
/// is exactly one node's, and every socket has a CPU of the run (sockets -> NUMA nodes).
fn check_node_sockets(s: &Scenario) -> Result<(), ScenarioError> {
    let m = &s.machine;
    let claimed: Vec<(usize, u32)> = m
        .nodes
        .iter()
        .enumerate()
        .filter_map(|(i, n)| n.socket.map(|sock| (i, sock)))
        .collect();
    let Some(&(first, _)) = claimed.first() else {
        return Ok(());
    };
    let Some(t) = m.topology_spec() else {
        return Err(invalid(
            format!("machine.node[{first}].socket"),
            claimed[0].1,
            "absent: a socket needs [machine.topology] or a machine.profile with one",
        ));
    };
    for (k, &(i, sock)) in claimed.iter().enumerate() {
        if sock == 0 || sock >= t.sockets || claimed[..k].iter().any(|&(_, o)| o == sock) {
            return Err(invalid(
                format!("machine.node[{i}].socket"),
                sock,
                format!(
                    "1 ..= {}, each socket once (node 0 holds socket 0)",
                    t.sockets - 1
                ),
            ));
        }
    }
    if claimed.len() as u32 != t.sockets - 1 {
        return Err(invalid(
            "machine.topology.sockets",
            t.sockets,
            format!(
                "{} (node 0 and the {} nodes with a socket): every socket is a node",
                claimed.len() + 1,
                claimed.len()
            ),
        ));
    }
    if m.cpus < t.sockets {
        return Err(invalid(
            "machine.cpus",
            m.cpus,
            format!("at least {} (a CPU on every socket's node)", t.sockets),
        ));
    }
    Ok(())
}

/// `[[machine.swap]]`: how many (MAX_SWAPFILES), each at least two swap clusters, then each
/// device's own fields.
fn check_swap_devices(s: &Scenario) -> Result<(), ScenarioError> {
    let m = &s.machine;
    if m.swap_devices.len() > MAX_SWAPFILES {
        return Err(invalid(
            "machine.swap",
            m.swap_devices.len(),
            "at most 16 devices",
        ));
    }
    for (i, dev) in m.swap_devices.iter().enumerate() {
        let clusters = dev.size.0 / (PAGE_SIZE * SWAPFILE_CLUSTER as u64);
        if clusters < 2 || dev.size.0 > 1 << 40 {
            return Err(invalid(
                format!("machine.swap[{i}].size"),
                format_size(dev.size.0),
                "4M ..= 1T (at least two 2 MiB swap clusters)",
            ));
        }
        s.check_swap_device(i, dev)?;
    }
    Ok(())
}

/// `kernel.lru_policy` must be one of the registered policies for the LRU the sysfs chose.
fn check_lru_policy(s: &Scenario) -> Result<(), ScenarioError> {
    let Some(p) = s.kernel.lru_policy else {
        return Ok(());
    };
    let lru_gen = s.sysfs.lru_gen.enabled();
    if p.entry().lru_gen != lru_gen {
        let fits: Vec<&str> = crate::mm::vmscan::LRU_POLICIES
            .iter()
            .filter(|e| e.lru_gen == lru_gen)
            .map(|e| e.name)
            .collect();
        return Err(invalid(
            "kernel.lru_policy",
            p.name(),
            format!(
                "{} with sysfs.lru_gen.enabled = {lru_gen}",
                fits.join(" | ")
            ),
        ));
    }
    Ok(())
}

/// What a workload's fields mean to its generator: xsbench's index grid must fit a u32 of
/// pages; a trace's file must read.
fn check_workload_in_model(s: &Scenario, i: usize, w: &WorkloadSpec) -> Result<(), ScenarioError> {
    let field = |name: &str| format!("workload[{i}].{name}");
    match w {
        WorkloadSpec::Xsbench(XsbenchSpec {
            size,
            isotopes,
            gridpoints,
            ..
        }) => {
            let g = crate::workload::xsbench::Grids::new(*size, *isotopes, *gridpoints);
            if g.index_grid_bytes / PAGE_SIZE >= u32::MAX as u64 {
                return Err(invalid(
                    field("gridpoints"),
                    g.gridpoints,
                    "a size whose index grid stays below 16 TiB",
                ));
            }
        }
        WorkloadSpec::Kbuild(KbuildSpec {
            tmpfs: Some(_),
            object_size_min,
            object_size_max,
            ..
        }) => {
            crate::workload::kbuild::validate_objects(
                &field("object_size_max"),
                *object_size_min,
                *object_size_max,
            )?;
        }
        WorkloadSpec::Registered(RegisteredSpec { name, params, .. }) => {
            // The workload checks its own params while it builds its tasks.
            (name.entry().tasks)(params, None, s.seed)
                .map_err(|e| invalid(field("params"), name.name(), e))?;
        }
        WorkloadSpec::Trace(t) => {
            crate::workload::trace::validate(t)
                .map_err(|(name, value, allowed)| invalid(field(name), value, allowed))?;
        }
        _ => {}
    }
    Ok(())
}

/// The simulator's own memory, on any host (run() also checks this host's).
fn check_footprint(s: &Scenario) -> Result<(), ScenarioError> {
    let footprint = crate::footprint::estimate(s);
    let total = footprint.total_bytes();
    if total > crate::footprint::STATIC_MAX_BYTES {
        let part = footprint
            .largest()
            .expect("machine.memory is always counted");
        return Err(invalid(
            part.field.clone(),
            &part.value,
            format!(
                "a scenario the simulator holds in at most 1 TiB of its own memory; this one needs about {} ({})",
                crate::footprint::human_bytes(total),
                footprint.summary()
            ),
        ));
    }
    Ok(())
}
