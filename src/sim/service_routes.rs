//! Service addresses advertised over BGP during the run (REFERENCE-policy §5): after every
//! event that may change a Service, its endpoints or the BGPConfiguration, each Calico node's
//! Service routes are recomputed (`forwarding::advertise`) and the difference is handed to the
//! BGP engine as static routes to originate or withdraw, at that instant (confd rewrites
//! BIRD's static routes as soon as it sees the change; its own delay is not modelled).

use super::*;
use crate::forwarding::advertise;

impl Simulation<'_> {
    /// Brings every node's originated Service routes to what the Services, their endpoints
    /// and the BGPConfiguration ask for now.
    pub(super) fn sync_service_routes(&mut self) {
        let cidrs = &self.world.control.bgp_inputs.services;
        if self.world.control.bgp.is_none()
            || (cidrs.is_empty() && self.world.control.service_routes.is_empty())
        {
            return;
        }
        let wanted = if cidrs.is_empty() {
            BTreeMap::new()
        } else {
            // Only Local Services' endpoints decide where their /32s come from.
            let table = services::table_where(
                &self.world,
                &self.scenario.workloads,
                self.scenario.seed,
                advertise::needs_endpoints,
            );
            advertise::advertised(cidrs, &table, &self.world.topology)
        };
        if wanted == self.world.control.service_routes {
            return;
        }
        let before = std::mem::take(&mut self.world.control.service_routes);
        let devices: BTreeSet<DeviceId> = before.keys().chain(wanted.keys()).copied().collect();
        let none = BTreeSet::new();
        let mut scheduled = Vec::new();
        if let Some(bgp) = self.world.control.bgp.as_mut() {
            for d in devices {
                let (old, new) = (
                    before.get(&d).unwrap_or(&none),
                    wanted.get(&d).unwrap_or(&none),
                );
                for gone in old.difference(new) {
                    scheduled.extend(bgp.withdraw_static(self.now, d, *gone));
                }
                for added in new.difference(old) {
                    scheduled.extend(bgp.originate_static(self.now, d, *added));
                }
            }
        }
        self.world.control.service_routes = wanted;
        self.schedule_bgp(scheduled);
    }
}
