//! A scenario built as real BIRD processes in Linux network namespaces.
//!
//! Every device of the scenario (node, ToR, spine, core) is one namespace named
//! `pnbird-<pid>-<case>-<device index>`; each rack segment is a bridge inside one more namespace
//! (`…-sw`), so nothing is created in the host's own namespace and only the scenario's addresses
//! are used. Nodes and their ToR reach the segment through veth pairs (`eth0`); fabric links are
//! point-to-point veth pairs (`f<link index>`) whose ends hold their device's address with the
//! other end's as peer. A node's pods are /32 routes on a `cali0` veth, as Felix programs them.
//! BIRD runs in every namespace with the configuration `podnet export bird` wrote, plus a
//! wrapper that adds a log file and millisecond time formats.
//!
//! [`Lab`]'s `Drop` kills every BIRD it started and deletes every namespace it made, on success,
//! failure or panic; [`sweep_stale`] removes what a killed earlier run left behind (its pid is
//! in the names).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use podnet::model::topology::{DeviceKind, LinkKind, Topology};

pub const PREFIX: &str = "pnbird-";

/// Why the live lab cannot run here, or `Ok` when it can.
pub fn available() -> Result<(), String> {
    for tool in ["bird", "birdc", "ip"] {
        if which(tool).is_none() {
            return Err(format!(
                "`{tool}` is not installed (Debian: apt-get install bird2 iproute2)"
            ));
        }
    }
    let probe = format!("{PREFIX}{}-probe", std::process::id());
    let out = Command::new("ip").args(["netns", "add", &probe]).output();
    match out {
        Ok(o) if o.status.success() => {
            let _ = Command::new("ip").args(["netns", "del", &probe]).output();
            Ok(())
        }
        Ok(o) => Err(format!(
            "cannot create network namespaces ({})",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!("cannot run `ip`: {e}")),
    }
}

fn which(tool: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    path.split(':')
        .chain(["/usr/sbin", "/sbin"])
        .map(|d| Path::new(d).join(tool))
        .find(|p| p.is_file())
}

/// Deletes the namespaces (and kills the processes inside them) of earlier runs whose test
/// process is gone.
pub fn sweep_stale() {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        let Some(rest) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let pid: u32 = rest
            .split('-')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        if pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        delete_namespace(name);
    }
}

fn delete_namespace(name: &str) {
    if let Ok(out) = Command::new("ip").args(["netns", "pids", name]).output() {
        for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
            let _ = Command::new("kill").args(["-9", pid]).output();
        }
    }
    let _ = Command::new("ip").args(["netns", "del", name]).output();
}

/// Runs a command and panics with its output if it fails.
fn run(args: &[&str]) -> String {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// One device's namespace and BIRD.
struct Device {
    name: String,
    ns: String,
    bird: Option<Child>,
    /// When its BIRD was (last) started.
    started: Option<SystemTime>,
}

pub struct Lab {
    dir: PathBuf,
    configs: PathBuf,
    switch: String,
    devices: Vec<Device>,
    /// Fabric link `f<i>` by its two ends' device indices.
    fabric: BTreeMap<(usize, usize), usize>,
    /// The instant scenario time 0 corresponds to (all BIRDs started).
    pub t0: Instant,
    pub t0_wall: SystemTime,
}

impl Drop for Lab {
    fn drop(&mut self) {
        for d in &mut self.devices {
            if let Some(mut child) = d.bird.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        for d in &self.devices {
            delete_namespace(&d.ns);
        }
        delete_namespace(&self.switch);
    }
}

impl Lab {
    /// Builds the namespaces, links, addresses and pod routes of `topology`, then starts BIRD
    /// in every device that has `<configs>/<device>.conf`.
    pub fn start(
        case: usize,
        topology: &Topology,
        pods: &[(String, IpAddr)],
        configs: &Path,
        dir: &Path,
    ) -> Lab {
        let base = format!("{PREFIX}{}-{case}", std::process::id());
        let mut lab = Lab {
            dir: dir.to_path_buf(),
            configs: configs.to_path_buf(),
            switch: format!("{base}-sw"),
            devices: Vec::new(),
            fabric: BTreeMap::new(),
            t0: Instant::now(),
            t0_wall: SystemTime::now(),
        };
        run(&["ip", "netns", "add", &lab.switch]);
        for (i, d) in topology.devices.iter().enumerate() {
            let ns = format!("{base}-{i}");
            // Filed before it exists, so that Drop removes it whatever fails next.
            lab.devices.push(Device {
                name: d.name.clone(),
                ns: ns.clone(),
                bird: None,
                started: None,
            });
            run(&["ip", "netns", "add", &ns]);
            run(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
            run(&[
                "ip",
                "netns",
                "exec",
                &ns,
                "sysctl",
                "-qw",
                "net.ipv4.ip_forward=1",
            ]);
        }
        for (r, rack) in topology.racks.iter().enumerate() {
            let br = format!("br{r}");
            run(&[
                "ip",
                "-n",
                &lab.switch,
                "link",
                "add",
                &br,
                "type",
                "bridge",
            ]);
            run(&["ip", "-n", &lab.switch, "link", "set", &br, "up"]);
            let mut members: Vec<usize> = rack
                .nodes
                .iter()
                .map(|n| topology.node(*n).device.index())
                .collect();
            members.push(rack.tor.index());
            for dev in members {
                let d = &topology.devices[dev];
                let ns = lab.devices[dev].ns.clone();
                let port = format!("p{dev}");
                run(&[
                    "ip",
                    "-n",
                    &ns,
                    "link",
                    "add",
                    "eth0",
                    "type",
                    "veth",
                    "peer",
                    "name",
                    &port,
                    "netns",
                    &lab.switch,
                ]);
                run(&[
                    "ip",
                    "-n",
                    &lab.switch,
                    "link",
                    "set",
                    &port,
                    "master",
                    &br,
                    "up",
                ]);
                let addr = format!("{}/{}", d.address, rack.subnet.prefix_len());
                run(&["ip", "-n", &ns, "addr", "add", &addr, "dev", "eth0"]);
                run(&["ip", "-n", &ns, "link", "set", "eth0", "up"]);
                if matches!(d.kind, DeviceKind::Node(_)) {
                    run(&[
                        "ip",
                        "-n",
                        &ns,
                        "route",
                        "add",
                        "default",
                        "via",
                        &rack.gateway.to_string(),
                    ]);
                }
            }
        }
        for (l, link) in topology.links.iter().enumerate() {
            if !matches!(link.kind, LinkKind::Fabric | LinkKind::InterZone) {
                continue;
            }
            let (a, b) = (link.a.index(), link.b.index());
            let ifname = format!("f{l}");
            let (na, nb) = (lab.devices[a].ns.clone(), lab.devices[b].ns.clone());
            run(&[
                "ip", "-n", &na, "link", "add", &ifname, "type", "veth", "peer", "name", &ifname,
                "netns", &nb,
            ]);
            for (ns, me, peer) in [(&na, a, b), (&nb, b, a)] {
                let local = topology.devices[me].address.to_string();
                let remote = format!("{}/32", topology.devices[peer].address);
                run(&[
                    "ip", "-n", ns, "addr", "add", &local, "peer", &remote, "dev", &ifname,
                ]);
                run(&["ip", "-n", ns, "link", "set", &ifname, "up"]);
            }
            lab.fabric.insert((a.min(b), a.max(b)), l);
        }
        for (node, ip) in pods {
            let ns = lab.ns(node).to_string();
            if Command::new("ip")
                .args(["-n", &ns, "link", "show", "cali0"])
                .output()
                .is_ok_and(|o| !o.status.success())
            {
                run(&[
                    "ip",
                    "-n",
                    &ns,
                    "link",
                    "add",
                    "cali0",
                    "type",
                    "veth",
                    "peer",
                    "name",
                    "calipeer0",
                ]);
                run(&["ip", "-n", &ns, "link", "set", "cali0", "up"]);
                run(&["ip", "-n", &ns, "link", "set", "calipeer0", "up"]);
            }
            run(&[
                "ip",
                "-n",
                &ns,
                "route",
                "add",
                &format!("{ip}/32"),
                "dev",
                "cali0",
            ]);
        }
        lab.t0 = Instant::now();
        lab.t0_wall = SystemTime::now();
        for i in 0..lab.devices.len() {
            lab.start_bird(i, false);
        }
        lab
    }

    fn index(&self, device: &str) -> usize {
        self.devices
            .iter()
            .position(|d| d.name == device)
            .unwrap_or_else(|| panic!("no device {device} in the lab"))
    }

    fn ns(&self, device: &str) -> &str {
        &self.devices[self.index(device)].ns
    }

    /// Starts (or restarts, with `-R`: graceful restart recovery, as calico-node does) BIRD.
    fn start_bird(&mut self, i: usize, recover: bool) {
        let name = self.devices[i].name.clone();
        let conf = self.configs.join(format!("{name}.conf"));
        if !conf.exists() {
            return;
        }
        let wrapper = self.dir.join(format!("{name}.lab.conf"));
        std::fs::write(
            &wrapper,
            format!(
                "# podnet's lab additions: a log file and millisecond times.\n\
                 log \"{}\" all;\ntimeformat protocol iso long ms;\ntimeformat route iso long ms;\n\
                 include \"{}\";\n",
                self.dir.join(format!("{name}.log")).display(),
                conf.display()
            ),
        )
        .expect("write the wrapper");
        let ctl = self.ctl(&name);
        let _ = std::fs::remove_file(&ctl);
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.devices[i].ns, "bird", "-f"]);
        if recover {
            cmd.arg("-R");
        }
        cmd.args([
            "-c",
            &wrapper.display().to_string(),
            "-s",
            &ctl.display().to_string(),
        ])
        .env("TZ", "UTC")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        let child = cmd.spawn().expect("spawn bird");
        self.devices[i].bird = Some(child);
        self.devices[i].started = Some(SystemTime::now());
    }

    fn ctl(&self, device: &str) -> PathBuf {
        self.dir.join(format!("{device}.ctl"))
    }

    /// Kills a device's BIRD at once (SIGKILL: no NOTIFICATION is sent).
    fn kill_bird(&mut self, i: usize) {
        if let Some(mut child) = self.devices[i].bird.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// `nodeDown`: the host goes silent (its segment port goes down first, so not even a TCP
    /// reset leaves it), then its BIRD dies.
    pub fn node_down(&mut self, node: &str) {
        let i = self.index(node);
        run(&[
            "ip",
            "-n",
            &self.switch,
            "link",
            "set",
            &format!("p{i}"),
            "down",
        ]);
        self.kill_bird(i);
    }

    /// `restartBgp`: BIRD is killed while the host keeps forwarding (its kernel routes persist).
    pub fn bgp_down(&mut self, node: &str) {
        let i = self.index(node);
        self.kill_bird(i);
    }

    /// `restartBgp` ends: BIRD starts again with `-R` (graceful restart recovery).
    pub fn bgp_up(&mut self, node: &str) {
        let i = self.index(node);
        self.start_bird(i, true);
    }

    /// `linkDown`: both ends of a fabric link, or a device's segment port.
    pub fn link_down(&mut self, a: &str, b: &str) {
        let (ia, ib) = (self.index(a), self.index(b));
        if let Some(l) = self.fabric.get(&(ia.min(ib), ia.max(ib))) {
            for i in [ia, ib] {
                run(&[
                    "ip",
                    "-n",
                    &self.devices[i].ns,
                    "link",
                    "set",
                    &format!("f{l}"),
                    "down",
                ]);
            }
        } else {
            // An access link: the node's end (the ToR's port stays up for the others).
            let node = if self.devices[ia].name.starts_with("tor-") {
                ib
            } else {
                ia
            };
            run(&[
                "ip",
                "-n",
                &self.switch,
                "link",
                "set",
                &format!("p{node}"),
                "down",
            ]);
        }
    }

    /// Replaces a router's configuration with `conf` and tells its BIRD to reload it (BIRD
    /// keeps the protocols whose configuration did not change).
    pub fn reconfigure(&self, device: &str, conf: &Path) {
        let target = self.configs.join(format!("{device}.conf"));
        let new = std::fs::read_to_string(conf).expect("new configuration");
        if std::fs::read_to_string(&target).ok().as_deref() == Some(new.as_str()) {
            return;
        }
        std::fs::write(&target, new).expect("write configuration");
        let out = self.birdc(device, "configure");
        assert!(
            out.contains("Reconfigur"),
            "{device}: birdc configure: {out}"
        );
    }

    /// Sleeps until scenario time `secs`.
    pub fn wait_until(&self, secs: f64) {
        let target = self.t0 + Duration::from_secs_f64(secs);
        let now = Instant::now();
        if target > now {
            std::thread::sleep(target - now);
        }
    }

    /// Whether the device's BIRD runs.
    pub fn running(&self, device: &str) -> bool {
        self.devices[self.index(device)].bird.is_some()
    }

    pub fn birdc(&self, device: &str, command: &str) -> String {
        let mut args = vec!["-s".to_string(), self.ctl(device).display().to_string()];
        args.extend(command.split_whitespace().map(str::to_string));
        let out = Command::new("birdc")
            .args(&args)
            .output()
            .expect("run birdc");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn kernel_routes(&self, device: &str) -> String {
        run(&["ip", "-n", self.ns(device), "-j", "route", "show"])
    }

    /// When the device's BIRD was last started, in seconds after the lab's time 0.
    pub fn started_at(&self, device: &str) -> Option<f64> {
        let started = self.devices[self.index(device)].started?;
        Some(
            started
                .duration_since(self.t0_wall)
                .map_or(0.0, |d| d.as_secs_f64()),
        )
    }

    /// Seconds since the Unix epoch of the lab's time 0.
    pub fn t0_epoch(&self) -> f64 {
        self.t0_wall
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64())
    }
}
