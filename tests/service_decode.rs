//! Decoding `v1` Services (SPEC §7, REFERENCE-policy §5): Kubernetes' defaults, the API
//! server's validation located at its field, `network.serviceClusterIPRange` and the cluster
//! IPs the allocator would refuse.
//!
//! Expected values come from the Kubernetes sources cited per case
//! (`pkg/apis/core/v1/defaults.go` SetDefaults_Service / SetDefaults_ServicePort,
//! `pkg/apis/core/validation/validation.go` ValidateService, validateServicePort,
//! `pkg/registry/core/service/ipallocator`).

use std::net::Ipv4Addr;

use podnet::model::service::{
    ClusterIpSpec, Service, ServiceType, SessionAffinity, TargetPort, TrafficPolicy,
};
use podnet::model::workload::PortProtocol;
use podnet::scenario::kinds::ResourceSpec;
use podnet::scenario::{Diagnostic, load_str};

fn scenario(network: &str, resources: &str) -> String {
    format!(
        "name: t\n\
         topology:\n\
         \x20 zones:\n\
         \x20 - name: z\n\
         \x20   racks:\n\
         \x20   - name: r\n\
         \x20     subnet: 10.6.0.0/24\n\
         \x20     nodes: [{{name: n1}}]\n\
         {network}\
         resources:\n\
         {resources}"
    )
}

fn services(resources: &str) -> Vec<Service> {
    match load_str("t.yaml", &scenario("", resources)) {
        Ok(s) => s
            .specs
            .into_iter()
            .filter_map(|spec| match spec {
                Some(ResourceSpec::Service(s)) => Some(s),
                _ => None,
            })
            .collect(),
        Err(d) => panic!("expected the scenario to load:\n{d}"),
    }
}

fn first_error(network: &str, resources: &str) -> Diagnostic {
    match load_str("t.yaml", &scenario(network, resources)) {
        Ok(_) => panic!("expected an error for:\n{resources}"),
        Err(d) => d.errors().next().expect("an error").clone(),
    }
}

const SVC: &str = "- apiVersion: v1\n  kind: Service\n  metadata: {name: s, namespace: shop}\n";

#[test]
fn defaults_are_kubernetes_ones() {
    let all = services(&format!(
        "{SVC}  spec: {{selector: {{app: a}}, ports: [{{port: 80}}]}}\n"
    ));
    let s = &all[0];
    // SetDefaults_Service: type ClusterIP, sessionAffinity None, internalTrafficPolicy
    // Cluster; SetDefaults_ServicePort: protocol TCP, targetPort = port.
    assert_eq!(s.service_type, ServiceType::ClusterIp);
    assert_eq!(s.session_affinity, SessionAffinity::None);
    assert_eq!(s.internal_traffic_policy, TrafficPolicy::Cluster);
    assert_eq!(s.cluster_ip, ClusterIpSpec::Allocate);
    assert_eq!(s.ports[0].protocol, PortProtocol::Tcp);
    assert_eq!(s.ports[0].target_port, TargetPort::Number(80));
    assert_eq!(s.namespace, "shop");
}

#[test]
fn every_modelled_field_is_read() {
    let all = services(&format!(
        "{SVC}  spec:\n    type: LoadBalancer\n    clusterIP: 10.96.7.7\n    selector: {{app: a}}\n    ports:\n    - {{name: sql, port: 3306, targetPort: sql, protocol: TCP, nodePort: 30306}}\n    - {{name: dns, port: 53, targetPort: 5353, protocol: UDP}}\n    sessionAffinity: ClientIP\n    sessionAffinityConfig: {{clientIP: {{timeoutSeconds: 60}}}}\n    internalTrafficPolicy: Local\n    externalTrafficPolicy: Local\n    externalIPs: [192.0.2.10]\n    loadBalancerIP: 192.0.2.20\n    publishNotReadyAddresses: true\n"
    ));
    let s = &all[0];
    assert_eq!(s.service_type, ServiceType::LoadBalancer);
    assert_eq!(
        s.cluster_ip,
        ClusterIpSpec::Fixed(Ipv4Addr::new(10, 96, 7, 7))
    );
    assert_eq!(s.ports[0].target_port, TargetPort::Name("sql".into()));
    assert_eq!(s.ports[0].node_port, Some(30306));
    assert_eq!(s.ports[1].protocol, PortProtocol::Udp);
    assert_eq!(s.ports[1].target_port, TargetPort::Number(5353));
    assert_eq!(s.session_affinity, SessionAffinity::ClientIp);
    assert_eq!(s.affinity_timeout_seconds, 60);
    assert_eq!(s.internal_traffic_policy, TrafficPolicy::Local);
    assert_eq!(s.external_traffic_policy, TrafficPolicy::Local);
    assert_eq!(s.external_ips, vec![Ipv4Addr::new(192, 0, 2, 10)]);
    assert_eq!(s.load_balancer_ip, Some(Ipv4Addr::new(192, 0, 2, 20)));
    assert!(s.publish_not_ready_addresses);
    // Headless; an empty selector is no selector (the API server drops an empty map).
    let all = services(&format!(
        "{SVC}  spec: {{clusterIP: None, selector: {{}}}}\n"
    ));
    assert!(all[0].is_headless());
    assert_eq!(all[0].selector, None);
}

#[test]
fn invalid_services_are_refused_at_their_field() {
    // (network, resources, path of the first error, words of its message).
    let cases: &[(&str, String, &str, &str)] = &[
        // ValidateService: ports required unless headless.
        (
            "",
            format!("{SVC}  spec: {{selector: {{app: a}}}}\n"),
            "resources[0].spec",
            "`ports` is required",
        ),
        // validateServicePort: names required with several ports, unique; (port, protocol)
        // unique; port in range; targetPort an IANA_SVC_NAME.
        (
            "",
            format!("{SVC}  spec: {{ports: [{{port: 80}}, {{name: b, port: 81}}]}}\n"),
            "resources[0].spec.ports[0].name",
            "more than one port",
        ),
        (
            "",
            format!("{SVC}  spec: {{ports: [{{name: a, port: 80}}, {{name: a, port: 81}}]}}\n"),
            "resources[0].spec.ports[1].name",
            "duplicate port name",
        ),
        (
            "",
            format!("{SVC}  spec: {{ports: [{{name: a, port: 80}}, {{name: b, port: 80}}]}}\n"),
            "resources[0].spec.ports[1].port",
            "duplicate port 80/TCP",
        ),
        (
            "",
            format!("{SVC}  spec: {{ports: [{{port: 0}}]}}\n"),
            "resources[0].spec.ports[0].port",
            "outside 1..=65535",
        ),
        (
            "",
            format!("{SVC}  spec: {{ports: [{{port: 80, targetPort: Web_Port}}]}}\n"),
            "resources[0].spec.ports[0].targetPort",
            "not a port name",
        ),
        (
            "",
            format!("{SVC}  spec: {{ports: [{{port: 80, protocol: TPC}}]}}\n"),
            "resources[0].spec.ports[0].protocol",
            "is not one of: TCP, UDP, SCTP",
        ),
        // nodePort only for NodePort and LoadBalancer.
        (
            "",
            format!("{SVC}  spec: {{ports: [{{port: 80, nodePort: 30080}}]}}\n"),
            "resources[0].spec.ports[0].nodePort",
            "may not be set for a ClusterIP Service",
        ),
        // validateServiceExternalTrafficPolicy.
        (
            "",
            format!("{SVC}  spec: {{ports: [{{port: 80}}], externalTrafficPolicy: Local}}\n"),
            "resources[0].spec.externalTrafficPolicy",
            "NodePort or LoadBalancer",
        ),
        // Headless LoadBalancer.
        (
            "",
            format!(
                "{SVC}  spec: {{type: LoadBalancer, clusterIP: None, ports: [{{port: 80}}]}}\n"
            ),
            "resources[0].spec.clusterIP",
            "may not be `None`",
        ),
        (
            "",
            format!(
                "{SVC}  spec: {{ports: [{{port: 80}}], sessionAffinityConfig: {{clientIP: {{timeoutSeconds: 60}}}}}}\n"
            ),
            "resources[0].spec.sessionAffinityConfig",
            "sessionAffinity: ClientIP",
        ),
        (
            "",
            format!(
                "{SVC}  spec: {{ports: [{{port: 80}}], sessionAffinity: ClientIP, sessionAffinityConfig: {{clientIP: {{timeoutSeconds: 90000}}}}}}\n"
            ),
            "resources[0].spec.sessionAffinityConfig.clientIP.timeoutSeconds",
            "outside 1..=86400",
        ),
        // A typo'd field: strict decoding with the nearest field.
        (
            "",
            format!("{SVC}  spec: {{ports: [{{port: 80}}], selectr: {{app: a}}}}\n"),
            "resources[0].spec.selectr",
            "did you mean `selector`",
        ),
        (
            "",
            format!("{SVC}  spec: {{ports: [{{port: 80, targetport: 8080}}]}}\n"),
            "resources[0].spec.ports[0].targetport",
            "did you mean `targetPort`",
        ),
        // The allocator: a named cluster IP inside the range, not the `kubernetes` Service's,
        // and not twice.
        (
            "",
            format!("{SVC}  spec: {{clusterIP: 10.200.0.1, ports: [{{port: 80}}]}}\n"),
            "resources[0].spec.clusterIP",
            "not in the valid range 10.96.0.0/12",
        ),
        (
            "network: {serviceClusterIPRange: 10.100.0.0/16}\n",
            format!("{SVC}  spec: {{clusterIP: 10.96.0.5, ports: [{{port: 80}}]}}\n"),
            "resources[0].spec.clusterIP",
            "not in the valid range 10.100.0.0/16",
        ),
        (
            "",
            format!("{SVC}  spec: {{clusterIP: 10.96.0.1, ports: [{{port: 80}}]}}\n"),
            "resources[0].spec.clusterIP",
            "`kubernetes` Service",
        ),
        (
            "",
            format!(
                "{SVC}  spec: {{clusterIP: 10.96.0.9, ports: [{{port: 80}}]}}\n- apiVersion: v1\n  kind: Service\n  metadata: {{name: t}}\n  spec: {{clusterIP: 10.96.0.9, ports: [{{port: 80}}]}}\n"
            ),
            "resources[1].spec.clusterIP",
            "already allocated to Service shop/s",
        ),
        // kube-apiserver: the range is at most a /12 (and must leave room).
        (
            "network: {serviceClusterIPRange: 10.0.0.0/8}\n",
            "- {apiVersion: v1, kind: Namespace, metadata: {name: shop}}\n".to_string(),
            "network.serviceClusterIPRange",
            "from /12 to /30",
        ),
    ];
    for (network, resources, path, words) in cases {
        let e = first_error(network, resources);
        assert_eq!(e.path, *path, "for:\n{resources}\n{e:?}");
        assert!(
            e.message.contains(words),
            "`{}` lacks `{words}` for:\n{resources}",
            e.message
        );
        assert!(e.pos.line > 0, "not located: {e:?}");
    }
}
