//! A task's memory policy and what it makes of one allocation (mm/mempolicy.c, 6.18):
//! policy_nodemask's preferred node and nodemask, interleave_nid / interleave_nodes.

use crate::scenario::{MempolicySpec, MpolMode};

/// nodemask_t: bit n for node n (the model has at most 8 nodes).
pub type NodeMask = u64;

/// Every node.
pub const ALL_NODES: NodeMask = !0;

/// NO_INTERLEAVE_INDEX: an allocation without a VMA (alloc_pages_noprof), which interleaves
/// by the task's il_prev instead of by offset.
pub const NO_INTERLEAVE_INDEX: u64 = u64::MAX;

/// struct mempolicy (mode and nodes; no flags, no home node).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mempolicy {
    pub mode: MpolMode,
    pub nodes: NodeMask,
}

impl Mempolicy {
    /// The task policy `[mempolicy]` asks for: None for the default (current->mempolicy NULL).
    pub fn from_spec(spec: &MempolicySpec) -> Option<Mempolicy> {
        let nodes = spec.nodes.iter().fold(0, |m, &n| m | 1 << n);
        match spec.mode {
            MpolMode::Default => None,
            mode => Some(Mempolicy { mode, nodes }),
        }
    }

    pub fn is_interleave(&self) -> bool {
        self.mode == MpolMode::Interleave
    }
}

/// What __alloc_pages is given: the preferred node (whose zonelist is walked) and the nodemask
/// that filters it (ALL_NODES: none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocNodes {
    pub nid: usize,
    pub nodemask: NodeMask,
}

impl AllocNodes {
    /// node_isset(nid, *nodemask), true without a nodemask.
    #[inline]
    pub fn allows(&self, nid: usize) -> bool {
        self.nodemask >> nid & 1 != 0
    }
}

/// policy_nodemask: the node an allocation of interleave index `ilx` by a CPU of node `local`
/// prefers, and its nodemask. `il_prev` is the task's (current->il_prev).
pub fn policy_nodemask(
    pol: &Mempolicy,
    ilx: u64,
    local: usize,
    il_prev: &mut Option<usize>,
) -> AllocNodes {
    let (nid, nodemask) = match pol.mode {
        MpolMode::Default => (local, ALL_NODES),
        MpolMode::Preferred => (first_node(pol.nodes), ALL_NODES),
        MpolMode::Bind => (local, pol.nodes),
        MpolMode::Interleave if ilx == NO_INTERLEAVE_INDEX => {
            (interleave_nodes(pol.nodes, il_prev), ALL_NODES)
        }
        MpolMode::Interleave => (interleave_nid(pol.nodes, ilx), ALL_NODES),
    };
    AllocNodes { nid, nodemask }
}

/// interleave_nid: the ilx'th node of the mask, wrapping around.
fn interleave_nid(nodes: NodeMask, ilx: u64) -> usize {
    let target = ilx % u64::from(nodes.count_ones());
    let mut nid = first_node(nodes);
    for _ in 0..target {
        nid = next_node_in(nid, nodes);
    }
    nid
}

/// interleave_nodes: the node after the task's last one (next_node_in(il_prev)).
fn interleave_nodes(nodes: NodeMask, il_prev: &mut Option<usize>) -> usize {
    let next = match *il_prev {
        Some(prev) => next_node_in(prev, nodes),
        None => first_node(nodes),
    };
    *il_prev = Some(next);
    next
}

fn first_node(nodes: NodeMask) -> usize {
    nodes.trailing_zeros() as usize
}

/// next_node_in: the next node of the mask after `nid`, wrapping to the first.
fn next_node_in(nid: usize, nodes: NodeMask) -> usize {
    let above = nodes & !((2u64 << nid) - 1);
    match above {
        0 => first_node(nodes),
        m => first_node(m),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pol(mode: MpolMode, nodes: &[u32]) -> Mempolicy {
        let spec = MempolicySpec {
            mode,
            nodes: nodes.to_vec(),
        };
        Mempolicy::from_spec(&spec).unwrap()
    }

    #[test]
    fn policy_nodemask_gives_each_mode_its_node_and_mask() {
        let mut il_prev = None;
        let p = pol(MpolMode::Preferred, &[2]);
        assert_eq!(policy_nodemask(&p, 0, 1, &mut il_prev).nid, 2);
        let b = policy_nodemask(&pol(MpolMode::Bind, &[1, 3]), 0, 0, &mut il_prev);
        assert_eq!((b.nid, b.nodemask), (0, 0b1010));
        assert!(!b.allows(0) && b.allows(3));
        // By offset in a VMA: the ilx'th node of {0, 2, 3}, wrapping.
        let i = pol(MpolMode::Interleave, &[0, 2, 3]);
        let nids: Vec<usize> = (0..5)
            .map(|ilx| policy_nodemask(&i, ilx, 1, &mut il_prev).nid)
            .collect();
        assert_eq!(nids, [0, 2, 3, 0, 2]);
        assert_eq!(il_prev, None, "offset interleave leaves il_prev alone");
        // Without a VMA: round robin from the task's last node.
        let nids: Vec<usize> = (0..4)
            .map(|_| policy_nodemask(&i, NO_INTERLEAVE_INDEX, 1, &mut il_prev).nid)
            .collect();
        assert_eq!(nids, [0, 2, 3, 0]);
        assert_eq!(il_prev, Some(0));
    }
}
