//! Static routes a Calico node originates besides its IPAM prefixes: the Service CIDRs and
//! Service /32s confd writes under `/staticroutes` (REFERENCE-policy §5). BIRD holds each as
//! `route CIDR blackhole` in its static protocol and Calico's export filter accepts anything
//! inside one (`net ~ cidr`), so a reflector passes on another node's Service /32 inside its
//! own Service CIDR; `calico_kernel_programming` keeps them out of the kernel, which is why
//! they never reach a node's FIB (`sim::dataplane`).
//!
//! Invariant: a prefix is a static route or an IPAM prefix of a speaker, never both at once
//! (Service CIDRs and pools do not overlap in a working cluster; the first origination wins).
//! What this is not: which prefixes a node advertises (`forwarding::advertise` decides that).

use ipnet::IpNet;

use super::{BgpEngine, Scheduled};
use crate::model::time::SimTime;
use crate::model::topology::DeviceId;

impl BgpEngine {
    /// The speaker now originates `prefix` as a static route.
    pub fn originate_static(
        &mut self,
        now: SimTime,
        speaker: DeviceId,
        prefix: IpNet,
    ) -> Scheduled {
        let Some(&s) = self.by_device.get(&speaker) else {
            return Vec::new();
        };
        let net = prefix.trunc();
        if self.rt[s.index()].removed {
            return Vec::new();
        }
        // Filed first, so the export filter already accepts it (and what lies inside it).
        let statics = &mut self.outbound[s.index()].statics;
        if let Err(i) = statics.binary_search(&net) {
            statics.insert(i, net);
        }
        self.originate_as(now, speaker, net, false)
    }

    /// The speaker stops originating the static route `prefix`.
    pub fn withdraw_static(&mut self, now: SimTime, speaker: DeviceId, prefix: IpNet) -> Scheduled {
        let Some(&s) = self.by_device.get(&speaker) else {
            return Vec::new();
        };
        let net = prefix.trunc();
        let statics = &mut self.outbound[s.index()].statics;
        // Unfiled first, so what lies inside it is filtered again when it goes.
        match statics.binary_search(&net) {
            Ok(i) => {
                statics.remove(i);
            }
            Err(_) => return Vec::new(),
        }
        self.withdraw(now, speaker, net)
    }

    /// The static routes the speaker originates, in prefix order.
    pub fn statics(&self, speaker: DeviceId) -> &[IpNet] {
        self.by_device
            .get(&speaker)
            .map_or(&[], |s| &self.outbound[s.index()].statics)
    }
}
