//! Static routes (Service CIDRs and /32s, `engine/statics.rs`) through a route reflector: a
//! reflector node passes on another node's Service /32 because it lies inside its own static
//! Service CIDR (Calico's `net ~ cidr` accept), and would refuse it without one (the /32 is in
//! no pool); a withdrawn static route goes away everywhere.

use super::*;

impl Net {
    fn originate_static(&mut self, node: &str, prefix: &str) {
        let d = self.dev(node);
        let evs = self.engine.originate_static(self.now, d, cidr(prefix));
        self.push(evs);
    }

    fn withdraw_static(&mut self, node: &str, prefix: &str) {
        let d = self.dev(node);
        let evs = self.engine.withdraw_static(self.now, d, cidr(prefix));
        self.push(evs);
    }
}

#[test]
fn a_reflector_passes_on_service_routes_inside_its_own_service_cidr() {
    // r0n0 reflects for r0n1 and r0n2 (cluster 1.1.1.1, no mesh). Every node originates the
    // cluster IP CIDR; r0n1 alone a Local Service's /32.
    let mut net = one_reflector_net(3);
    net.originate_static("r0n1", "10.96.0.10/32");
    net.settle();
    // The reflector has no static route yet: 10.96.0.10/32 is in no pool, so its export
    // filter refuses it and r0n2 never hears of it.
    assert_eq!(net.next_hop_name("r0n0", "10.96.0.10/32").unwrap(), "r0n1");
    assert!(net.best("r0n2", "10.96.0.10/32").is_none());
    for n in ["r0n0", "r0n1", "r0n2"] {
        net.originate_static(n, "10.96.0.0/12");
    }
    net.settle();
    assert_eq!(net.next_hop_name("r0n2", "10.96.0.10/32").unwrap(), "r0n1");
    assert_eq!(
        net.engine.statics(net.dev("r0n1")),
        [cidr("10.96.0.0/12"), cidr("10.96.0.10/32")]
    );
    // A node's own static route is local (a blackhole in BIRD), whatever it learns.
    assert!(net.best("r0n2", "10.96.0.0/12").unwrap().local);
    // The endpoint goes: the /32 is withdrawn from everyone.
    net.withdraw_static("r0n1", "10.96.0.10/32");
    net.settle();
    assert!(net.best("r0n0", "10.96.0.10/32").is_none());
    assert!(net.best("r0n2", "10.96.0.10/32").is_none());
    assert_eq!(net.engine.statics(net.dev("r0n1")), [cidr("10.96.0.0/12")]);
}
