#!/usr/bin/env bash
# Scale benchmarks (issues #6, #20): generate the cluster scenarios, time `podnet check` and
# `podnet run` on each and print a Markdown table of wall time, CPU time (user + system: the
# figure to compare on a busy machine) and peak memory (resident set, from GNU time), the
# median of several runs, with the commit and the CPU model.
#
#   scripts/bench.sh                    # build, generate, run every size, print the table
#   scripts/bench.sh --generate         # only (re)write the scenarios into benches/scenarios/
#   scripts/bench.sh rr-5000 mesh-1000  # run the named sizes only
#   scripts/bench.sh --runs 1 --commands check rr-1000
#
# Options: --runs N (default 3; the table shows the median of N), --commands check,run,diff,sweep
# (default check,run; `run` writes its output folder, with the default `--events` level, into a
# temporary folder and the table shows the size of its events.jsonl; `diff` (issue #15) compares
# the scenario with itself scaled down by 1 % — `--set workloads[0].replicas=99 %` — with
# `--fail-on none`, so it exits 0 unless the input is invalid; its target is about the time of
# two `check`s; `sweep` (issue #20) runs ten variants of the scenario that differ only in
# `seed`, on every core; its target, measured in the same runs and printed in a row of its
# own, is the sum of the ten variants' `check` times divided by the cores; a third row, for
# comparison, times the same ten `check`s run as many at a time as there are cores).
#
# Sizes: route reflectors (mesh off, 3 reflectors, 30 pods per node) at 1,000 / 2,000 / 5,000
# nodes and a full node-to-node mesh at 250 / 500 / 1,000 nodes. Every scenario is 5 zones of
# racks of up to 40 nodes, one /12 pool of /26 blocks with IPIP CrossSubnet, one Deployment
# and an all-pairs `reachable` expectation, so a run goes from cold start through scheduling,
# IPAM, BGP convergence and all-pairs reachability. The `-policy` sizes add 50 namespaces and
# 200 policies in three tiers (issue #17; `policy_resources` below) and split the pods into a
# web and a db Deployment per namespace; `-policy-off` is the same scenario with
# `network.policy: ignore`, the baseline the policy cost is measured against. The `-events`
# sizes add 1,000 events over an hour to the reflector cluster (issue #20; `churn_events`
# below); their target is under twice the cold start. Criterion micro-benchmarks (engine, IPAM,
# LPM) are separate: `cargo bench`. Run one measurement at a time on a quiet machine.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/benches/scenarios"
podnet="$root/target/dist/podnet"

# name  mode  racks-per-zone  nodes-per-rack  policy (none, enforce, ignore)  [events]
sizes=(
  "rr-1000   rr   5  40 none"
  "rr-2000   rr   10 40 none"
  "rr-5000   rr   25 40 none"
  "mesh-250  mesh 5  10 none"
  "mesh-500  mesh 5  20 none"
  "mesh-1000 mesh 5  40 none"
  "rr-1000-policy     rr 5  40 enforce"
  "rr-1000-policy-off rr 5  40 ignore"
  "rr-5000-policy     rr 25 40 enforce"
  "rr-5000-policy-off rr 25 40 ignore"
  "rr-1000-events rr 5  40 none 1000"
  "rr-5000-events rr 25 40 none 1000"
)

# policy_resources: 50 namespaces (team t0–t4, env prod/dev) and 200 policies in three tiers
# (issue #17's performance case): per namespace three Kubernetes NetworkPolicies (a default
# deny of ingress, allow from the same namespace, db from the team's web on 5432) = 150; 40
# Calico NetworkPolicies in tier `platform` (metrics on 9100 from ns-00, then the tier's
# default Pass); 10 GlobalNetworkPolicies in tier `security` (5 ingress: deny another team's
# dev namespaces, then Pass; 5 egress: deny TCP 22, then Pass).
policy_resources() {
  local i k
  echo "- {apiVersion: projectcalico.org/v3, kind: Tier, metadata: {name: security}, spec: {order: 100}}"
  echo "- {apiVersion: projectcalico.org/v3, kind: Tier, metadata: {name: platform}, spec: {order: 200, defaultAction: Pass}}"
  for ((i = 0; i < 50; i++)); do
    local ns team env
    ns=$(printf 'ns-%02d' "$i")
    team="t$((i % 5))"
    env=$( ((i % 2 == 0)) && echo prod || echo dev)
    echo "- {apiVersion: v1, kind: Namespace, metadata: {name: $ns, labels: {team: $team, env: $env}}}"
    echo "- apiVersion: networking.k8s.io/v1"
    echo "  kind: NetworkPolicy"
    echo "  metadata: {name: default-deny, namespace: $ns}"
    echo "  spec: {podSelector: {}, policyTypes: [Ingress]}"
    echo "- apiVersion: networking.k8s.io/v1"
    echo "  kind: NetworkPolicy"
    echo "  metadata: {name: allow-same-namespace, namespace: $ns}"
    echo "  spec: {podSelector: {}, ingress: [{from: [{podSelector: {}}]}]}"
    echo "- apiVersion: networking.k8s.io/v1"
    echo "  kind: NetworkPolicy"
    echo "  metadata: {name: db-from-team-web, namespace: $ns}"
    echo "  spec:"
    echo "    podSelector: {matchLabels: {app: db}}"
    echo "    ingress:"
    echo "    - from: [{namespaceSelector: {matchLabels: {team: $team}}, podSelector: {matchLabels: {app: web}}}]"
    echo "      ports: [{port: 5432}]"
    if ((i < 40)); then
      echo "- apiVersion: projectcalico.org/v3"
      echo "  kind: NetworkPolicy"
      echo "  metadata: {name: platform.metrics, namespace: $ns}"
      echo "  spec:"
      echo "    tier: platform"
      echo "    selector: all()"
      echo "    types: [Ingress]"
      echo "    ingress:"
      echo "    - {action: Allow, protocol: TCP, source: {namespaceSelector: projectcalico.org/name == 'ns-00'}, destination: {ports: [9100]}}"
    fi
  done
  for ((k = 0; k < 10; k++)); do
    echo "- apiVersion: projectcalico.org/v3"
    echo "  kind: GlobalNetworkPolicy"
    if ((k < 5)); then
      echo "  metadata: {name: security.isolate-$k}"
      echo "  spec:"
      echo "    tier: security"
      echo "    order: $((10 * k))"
      echo "    namespaceSelector: team == 't$k' && env == 'prod'"
      echo "    selector: all()"
      echo "    types: [Ingress]"
      echo "    ingress:"
      echo "    - {action: Deny, source: {namespaceSelector: team == 't$(((k + 1) % 5))' && env == 'dev'}}"
      echo "    - {action: Pass}"
    else
      echo "  metadata: {name: security.no-ssh-$k}"
      echo "  spec:"
      echo "    tier: security"
      echo "    order: $((10 * k))"
      echo "    namespaceSelector: team == 't$((k % 5))'"
      echo "    selector: app == 'web'"
      echo "    types: [Egress]"
      echo "    egress:"
      echo "    - {action: Deny, protocol: TCP, destination: {ports: [22]}}"
      echo "    - {action: Pass}"
    fi
  done
}

# churn_events RACKS PODS: issue #20's event load, 1,000 events in 100 groups of 10, one group
# every 33 s (the last ends at 3,568 s): the Deployment scaled down by 100–500 pods and back
# 18 s later; a node down for 300 s (its peers' hold timers, 180–240 s, run out: sessions drop,
# then re-establish) and another for 30 s (sessions survive); a rack's ToR–spine link down for
# 10 s and another's for 30 s (the rack is cut off: one spine per zone). Deterministic
# arithmetic picks: the long-down node is n-1..n-19 of a rack, the short one n-20..n-39, so no
# node is taken down twice at once; the two links are in different zones. Every change is
# undone by the end, so the end-state expectations are those of the cold start.
churn_events() {
  local racks=$1 pods=$2 g t
  echo "events:"
  for ((g = 0; g < 100; g++)); do
    t=$((g * 33))
    local long="z$((g * 3 % 5))-r$(((g * 7 + 1) % racks))-n-$((g * 13 % 19 + 1))"
    local short="z$(((g * 3 + 2) % 5))-r$(((g * 11 + 2) % racks))-n-$((g * 17 % 20 + 20))"
    local zb=$((g % 5)) zd=$(((g + 2) % 5))
    local link_b="[tor-z$zb-r$((g * 3 % racks)), spine-z$zb-1]"
    local link_d="[tor-z$zd-r$(((g * 7 + 3) % racks)), spine-z$zd-1]"
    echo "- {at: ${t}s, scale: {workload: web, replicas: $((pods - 100 * (g % 5 + 1)))}}"
    echo "- {at: $((t + 1))s, nodeDown: $long}"
    echo "- {at: $((t + 2))s, linkDown: $link_b}"
    echo "- {at: $((t + 3))s, nodeDown: $short}"
    echo "- {at: $((t + 4))s, linkDown: $link_d}"
    echo "- {at: $((t + 12))s, linkUp: $link_b}"
    echo "- {at: $((t + 18))s, scale: {workload: web, replicas: $pods}}"
    echo "- {at: $((t + 33))s, nodeUp: $short}"
    echo "- {at: $((t + 34))s, linkUp: $link_d}"
    echo "- {at: $((t + 301))s, nodeUp: $long}"
  done
}

# generate NAME MODE RACKS NODES POLICY [EVENTS]: write benches/scenarios/NAME.yaml.
generate() {
  local name=$1 mode=$2 racks=$3 per_rack=$4 policy=$5 events=${6:-0}
  local zones=5 nodes=$((5 * racks * per_rack))
  local pods=$((nodes * 30))
  local file="$out/$name.yaml"
  {
    echo "# Generated by scripts/bench.sh: $zones zones x $racks racks x $per_rack nodes, $pods pods."
    echo "name: $name"
    if [[ $mode == rr ]]; then
      echo "description: $nodes nodes, 3 route reflectors, mesh off, $pods pods, /12 pool of /26 blocks, IPIP CrossSubnet."
    else
      echo "description: $nodes nodes, full node-to-node mesh, $pods pods, /12 pool of /26 blocks, IPIP CrossSubnet."
    fi
    echo "topology:"
    echo "  zones:"
    local z r subnet
    for ((z = 0; z < zones; z++)); do
      echo "  - name: z$z"
      echo "    racks:"
      for ((r = 0; r < racks; r++)); do
        subnet="10.$((z * 32 + r / 256)).$((r % 256)).0/24"
        echo "    - name: z$z-r$r"
        echo "      subnet: $subnet"
        if [[ $mode == rr && $r == 0 && $z -lt 3 ]]; then
          # One reflector in the first rack of the first three zones; one cluster ID.
          echo "      nodes:"
          echo "      - {name: z$z-rr, labels: {route-reflector: \"true\"}, bgp: {routeReflectorClusterID: 244.0.0.1}}"
          echo "      - {namePrefix: z$z-r$r-n, count: $((per_rack - 1))}"
        else
          echo "      nodes: [{namePrefix: z$z-r$r-n, count: $per_rack}]"
        fi
      done
    done
    echo "resources:"
    echo "- apiVersion: projectcalico.org/v3"
    echo "  kind: IPPool"
    echo "  metadata: {name: pods}"
    echo "  spec: {cidr: 100.64.0.0/12, blockSize: 26, ipipMode: CrossSubnet}"
    if [[ $mode == rr ]]; then
      echo "- apiVersion: projectcalico.org/v3"
      echo "  kind: BGPConfiguration"
      echo "  metadata: {name: default}"
      echo "  spec: {nodeToNodeMeshEnabled: false, asNumber: 64512}"
      echo "- apiVersion: projectcalico.org/v3"
      echo "  kind: BGPPeer"
      echo "  metadata: {name: peer-with-route-reflectors}"
      echo "  spec: {nodeSelector: \"!has(route-reflector)\", peerSelector: has(route-reflector)}"
      echo "- apiVersion: projectcalico.org/v3"
      echo "  kind: BGPPeer"
      echo "  metadata: {name: rr-mesh}"
      echo "  spec: {nodeSelector: has(route-reflector), peerSelector: has(route-reflector)}"
    fi
    if [[ $policy != none ]]; then
      policy_resources
      echo "network: {policy: $policy}"
      # 50 namespaces, each a web and a db Deployment sharing the namespace's pods.
      echo "workloads:"
      local i ns
      for ((i = 0; i < 50; i++)); do
        ns=$(printf 'ns-%02d' "$i")
        echo "- {name: web, namespace: $ns, replicas: $((pods / 100)), labels: {app: web}, ports: [{name: http, containerPort: 8080}]}"
        echo "- {name: db, namespace: $ns, replicas: $((pods / 100)), labels: {app: db}, ports: [{name: postgres, containerPort: 5432}]}"
      done
      echo "expect:"
      echo "- pods: {of: all, running: $pods}"
    else
      echo "workloads:"
      echo "- {name: web, replicas: $pods}"
      echo "expect:"
      echo "- pods: {of: {workload: web}, running: $pods}"
    fi
    if [[ $mode == rr ]]; then
      echo "- bgp: {sessionsEstablished: $((3 * (nodes - 3) + 3))}"
    else
      echo "- bgp: {sessionsEstablished: $((nodes * (nodes - 1) / 2))}"
    fi
    if [[ $policy == enforce ]]; then
      # All-pairs reachability over every packet class policy tells apart. It fails by
      # design (policy denies some pairs); the row measures the computation.
      echo "- {name: all pairs with policy (fails by design), reachable: {from: all, to: all}}"
    elif [[ $policy == ignore ]]; then
      echo "- {name: all pairs without policy, reachable: {from: all, to: all}}"
    else
      echo "- reachable: {from: {workload: web}, to: {workload: web}}"
    fi
    if ((events > 0)); then
      churn_events "$racks" "$pods"
    fi
  } >"$file"
}

generate_only=false
runs=3
commands=check,run
wanted=()
while (($# > 0)); do
  case $1 in
    --generate) generate_only=true ;;
    --runs) runs=$2; shift ;;
    --commands) commands=$2; shift ;;
    -h | --help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) wanted+=("$1") ;;
  esac
  shift
done

mkdir -p "$out"
selected=()
for size in "${sizes[@]}"; do
  read -r name mode racks per_rack policy events <<<"$size"
  if ((${#wanted[@]} > 0)) && [[ ! " ${wanted[*]} " == *" $name "* ]]; then
    continue
  fi
  generate "$name" "$mode" "$racks" "$per_rack" "$policy" "${events:-0}"
  selected+=("$name")
done
if ((${#selected[@]} == 0)); then
  echo "bench.sh: no size named ${wanted[*]}; sizes: rr-1000 rr-2000 rr-5000 mesh-250 mesh-500 mesh-1000 rr-1000-policy rr-1000-policy-off rr-5000-policy rr-5000-policy-off rr-1000-events rr-5000-events" >&2
  exit 2
fi
$generate_only && exit 0

# The `dist` profile (Cargo.toml): the binary as installed, optimized across crates.
(cd "$root" && cargo build --profile dist --quiet)

# median: the middle of the numbers on stdin (the lower middle for an even count).
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

cpu=$(lscpu 2>/dev/null | awk -F: '/^Model name/ {sub(/^ */, "", $2); print $2; exit}')
[[ -n $cpu ]] || cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
commit=$(git -C "$root" rev-parse --short HEAD)
git -C "$root" diff --quiet HEAD -- src Cargo.toml Cargo.lock || commit="$commit+changes"
echo "Machine: $(nproc) cores ($cpu), $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo); podnet $commit; median of $runs"
echo
echo "| scenario | nodes | pods | BGP sessions | command | wall time | CPU time | peak memory | events.jsonl | expectations |"
echo "|---|---:|---:|---:|---|---:|---:|---:|---:|---|"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for name in "${selected[@]}"; do
  file="$out/$name.yaml"
  nodes=$(awk '/count:/ {gsub(/[^0-9]/, "", $NF); n += $NF} /name: z[0-9]+-rr/ {n++} END {print n}' "$file")
  # The workloads' replicas at the start (the `-events` sizes scale them later: not counted).
  pods=$(awk -F'replicas: ' '/^events:/ {exit} /replicas:/ {sub(/[^0-9].*/, "", $2); n += $2} END {print n}' "$file")
  sessions=$(awk -F'sessionsEstablished: ' '/sessionsEstablished/ {sub(/}.*/, "", $2); print $2}' "$file")
  for command in ${commands//,/ }; do
    status=PASS
    events=-
    : >"$work/times"
    for ((i = 0; i < runs; i++)); do
      case $command in
        check) args=(check "$file") ;;
        run) args=(run "$file" --out "$work/out" --quiet) ;;
        sweep)
          # Ten variants that each cost one `check` (only the seed differs), run on every
          # core; the target is the sum of ten `check`s divided by the cores.
          args=(sweep "$file" --set "seed=$(seq -s, 1 10)" --no-chart)
          ;;
        diff)
          first=$(awk -F'replicas: ' '/replicas:/ {sub(/[^0-9].*/, "", $2); print $2; exit}' "$file")
          args=(diff "$file" --set "workloads[0].replicas=$((first * 99 / 100))" --fail-on none)
          ;;
        *) echo "bench.sh: unknown command $command (check, run, diff, sweep)" >&2; exit 2 ;;
      esac
      /usr/bin/time -f '%e %M %U %S' -o "$work/time" "$podnet" "${args[@]}" >"$work/log" 2>&1 || status=FAIL
      cat "$work/time" >>"$work/times"
      if [[ $command == sweep ]]; then
        # The sweep's target, measured in the same run: each of its ten variants (the
        # scenario with `seed: N`) checked on its own, one after another; the sum of their
        # times divided by the cores.
        : >"$work/variants"
        for v in $(seq 1 10); do
          { cat "$file"; echo "seed: $v"; } >"$work/variant-$v.yaml"
          /usr/bin/time -f '%e %U %S' -o "$work/time" "$podnet" check "$work/variant-$v.yaml" >/dev/null 2>&1 || status=FAIL
          cat "$work/time" >>"$work/variants"
        done
        awk -v cores="$(nproc)" '{w += $1; c += $2 + $3} END {print w / cores, c / cores}' "$work/variants" >>"$work/targets"
        # For comparison (not the target): the same ten `check`s run as many at a time as
        # there are cores, as separate processes — what running simulations side by side
        # costs without the sweep (the wall time of the ten, and their CPU time).
        : >"$work/parallel"
        start=$(date +%s.%N)
        for ((v = 1; v <= 10; v += $(nproc))); do
          pids=()
          for ((k = v; k < v + $(nproc) && k <= 10; k++)); do
            /usr/bin/time -a -f '%U %S' -o "$work/parallel" "$podnet" check "$work/variant-$k.yaml" >/dev/null 2>&1 &
            pids+=($!)
          done
          for pid in "${pids[@]}"; do wait "$pid" || status=FAIL; done
        done
        awk -v start="$start" -v end="$(date +%s.%N)" '{c += $1 + $2} END {print end - start, c}' "$work/parallel" >>"$work/side-by-side"
        rm -f "$work"/variant-*.yaml
      fi
      if [[ $command == run ]]; then
        # `run` always exits 0; its expectations are judged in report.json.
        failed=$(awk -F': ' '/"expectationsFailed"/ {gsub(/[^0-9]/, "", $2); print $2; exit}' "$work/out/report.json")
        [[ ${failed:-1} == 0 ]] || status=FAIL
        events=$(du -m "$work/out/events.jsonl" | cut -f1)
        events="$events MB"
      fi
    done
    wall=$(awk '{print $1}' "$work/times" | median)
    kib=$(awk '{print $2}' "$work/times" | median)
    cpu_s=$(awk '{print $3 + $4}' "$work/times" | median)
    # A sweep and its target row are compared to the hundredth.
    places=1
    [[ $command == sweep ]] && places=2
    printf "| %s | %s | %s | %s | %s | %.${places}f s | %.${places}f s | %.2f GiB | %s | %s |\n" "$name" "$nodes" "$pods" \
      "$sessions" "$command" "$wall" "$cpu_s" "$(awk -v k="$kib" 'BEGIN {print k / 1048576}')" "$events" "$status"
    if [[ $command == sweep ]]; then
      printf '| %s | %s | %s | %s | target: ten variants'"'"' `check`s ÷ %s cores | %.2f s | %.2f s | - | - | - |\n' "$name" "$nodes" \
        "$pods" "$sessions" "$(nproc)" "$(awk '{print $1}' "$work/targets" | median)" "$(awk '{print $2}' "$work/targets" | median)"
      printf '| %s | %s | %s | %s | for comparison: the ten `check`s %s at a time | %.2f s | %.2f s | - | - | - |\n' "$name" "$nodes" \
        "$pods" "$sessions" "$(nproc)" "$(awk '{print $1}' "$work/side-by-side" | median)" "$(awk '{print $2}' "$work/side-by-side" | median)"
      rm -f "$work/targets" "$work/side-by-side"
    fi
    if [[ $status == FAIL ]]; then
      sed 's/^/    /' "$work/log" >&2
    fi
    rm -rf "$work/out"
  done
done
