//! The aggregated drawing, for clusters too large to show node by node: one tile per rack (or
//! per zone), its nodes and sessions counted, and the sessions between tiles drawn once per
//! pair with their counts.

use super::*;

/// One tile of the aggregated picture: a rack (or a zone) and what it holds.
#[derive(Default)]
pub(super) struct Tile {
    name: String,
    subtitle: String,
    nodes: usize,
    down: usize,
    links_down: usize,
    reflectors: Vec<String>,
    /// Sessions with an end in the tile, by state rank.
    sessions: [usize; 3],
}

/// Racks (or zones) as tiles, in bands per zone, with bundled sessions.
pub(super) fn aggregated(topo: &Topology, sessions: &[SessionRow], by_zone: bool) -> String {
    // Which tile (or router box) each device is drawn in.
    let mut tiles: Vec<Tile> = Vec::new();
    let mut tile_of_device: Vec<Option<usize>> = vec![None; topo.devices.len()];
    // Bands: title, spines, tiles.
    let mut bands: Vec<(String, Vec<usize>, Vec<usize>)> = Vec::new();
    if by_zone {
        let mut members = Vec::new();
        for zone in &topo.zones {
            let t = tiles.len();
            let tile = Tile {
                name: zone.name.clone(),
                subtitle: counted(zone.racks.len(), "rack"),
                ..Tile::default()
            };
            for &r in &zone.racks {
                if let Some(rack) = topo.racks.get(r.index()) {
                    tile_of_device[rack.tor.index()] = Some(t);
                }
            }
            for &s in &zone.spines {
                tile_of_device[s.index()] = Some(t);
            }
            tiles.push(tile);
            members.push(t);
        }
        bands.push((format!("{} zones", topo.zones.len()), Vec::new(), members));
    } else {
        for zone in &topo.zones {
            let mut members = Vec::new();
            for &r in &zone.racks {
                let Some(rack) = topo.racks.get(r.index()) else {
                    continue;
                };
                let t = tiles.len();
                tile_of_device[rack.tor.index()] = Some(t);
                tiles.push(Tile {
                    name: rack.name.clone(),
                    subtitle: rack.subnet.to_string(),
                    ..Tile::default()
                });
                members.push(t);
            }
            bands.push((
                format!("zone {}", zone.name),
                zone.spines.iter().map(|s| s.index()).collect(),
                members,
            ));
        }
    }
    for node in topo.nodes.iter().filter(|n| !n.deleted) {
        let t = if by_zone {
            Some(node.zone.index())
        } else {
            topo.racks
                .get(node.rack.index())
                .and_then(|r| tile_of_device[r.tor.index()])
        };
        if let Some(t) = t.filter(|&t| t < tiles.len()) {
            tile_of_device[node.device.index()] = Some(t);
            tiles[t].nodes += 1;
            tiles[t].down += usize::from(node.down);
        }
    }
    for link in topo.links.iter().filter(|l| !l.up) {
        let (a, b) = (link.a.index(), link.b.index());
        let t = tile_of_device
            .get(a)
            .copied()
            .flatten()
            .or_else(|| tile_of_device.get(b).copied().flatten());
        if let Some(t) = t {
            tiles[t].links_down += 1;
        }
    }
    let by_name: BTreeMap<&str, usize> = topo
        .devices
        .iter()
        .enumerate()
        .map(|(i, d)| (d.name.as_str(), i))
        .collect();
    let rrs = reflectors(sessions);
    for rr in &rrs {
        if let Some(t) = by_name.get(rr).and_then(|&d| tile_of_device[d]) {
            tiles[t].reflectors.push((*rr).to_string());
        }
    }
    for s in sessions {
        let rank = state_rank(s.state);
        let ta = by_name.get(&*s.a).and_then(|&d| tile_of_device[d]);
        let tb = by_name.get(&*s.b).and_then(|&d| tile_of_device[d]);
        for t in [ta, tb].into_iter().flatten() {
            tiles[t].sessions[rank] += 1;
        }
    }

    // Layout: the core on top, then one band per zone with its spines and a grid of tiles.
    let core_y = MARGIN + 24.0;
    let mut y = core_y + ROUTER_H + 30.0;
    let mut placed_tiles: Vec<Option<Placed>> = vec![None; tiles.len()];
    let mut placed_routers: BTreeMap<usize, Placed> = BTreeMap::new();
    let mut band_boxes: Vec<(Placed, String)> = Vec::new();
    let grid_w = TILES_PER_ROW as f64 * (TILE_W + 8.0) - 8.0;
    let width = grid_w + 2.0 * MARGIN + 24.0;
    for (title, spines, members) in &bands {
        let top = y;
        y += 26.0;
        if !spines.is_empty() {
            let w = spines.len() as f64 * (ROUTER_W + 12.0) - 12.0;
            for (k, &s) in spines.iter().enumerate() {
                placed_routers.insert(
                    s,
                    Placed {
                        x: (width - w) / 2.0 + k as f64 * (ROUTER_W + 12.0),
                        y,
                        w: ROUTER_W,
                        h: ROUTER_H,
                    },
                );
            }
            y += ROUTER_H + 26.0;
        }
        for (i, &t) in members.iter().enumerate() {
            let (row, col) = (i / TILES_PER_ROW, i % TILES_PER_ROW);
            placed_tiles[t] = Some(Placed {
                x: MARGIN + 12.0 + col as f64 * (TILE_W + 8.0),
                y: y + row as f64 * (TILE_H + 8.0),
                w: TILE_W,
                h: TILE_H,
            });
        }
        let rows = members.len().div_ceil(TILES_PER_ROW).max(1);
        y += rows as f64 * (TILE_H + 8.0) + 4.0;
        let nodes: usize = members.iter().map(|&t| tiles[t].nodes).sum();
        let down: usize = members.iter().map(|&t| tiles[t].down).sum();
        let label = if down > 0 {
            format!("{title} · {} ({down} down)", counted(nodes, "node"))
        } else {
            format!("{title} · {}", counted(nodes, "node"))
        };
        band_boxes.push((
            Placed {
                x: MARGIN,
                y: top,
                w: width - 2.0 * MARGIN,
                h: y - top,
            },
            label,
        ));
        y += 14.0;
    }
    let cores: Vec<usize> = topo
        .devices
        .iter()
        .enumerate()
        .filter(|(_, d)| d.kind == DeviceKind::Core)
        .map(|(i, _)| i)
        .collect();
    let cores_w = cores.len() as f64 * (ROUTER_W + 12.0) - 12.0;
    for (k, &c) in cores.iter().enumerate() {
        placed_routers.insert(
            c,
            Placed {
                x: (width - cores_w) / 2.0 + k as f64 * (ROUTER_W + 12.0),
                y: core_y,
                w: ROUTER_W,
                h: ROUTER_H,
            },
        );
    }
    let legend_y = y + 16.0;
    let height = legend_y + LEGEND_H;
    let box_of = |key: usize| -> Option<Placed> {
        match key.checked_sub(topo.devices.len()) {
            Some(t) => placed_tiles.get(t).copied().flatten(),
            None => placed_routers.get(&key).copied(),
        }
    };

    let live: usize = tiles.iter().map(|t| t.nodes).sum();
    let unit = if by_zone { "zone" } else { "rack" };
    let suffix = format!(" (one tile per {unit})");
    let mut svg = canvas(topo, live, sessions, &suffix, (width, height));
    for (at, label) in &band_boxes {
        outline(&mut svg, *at, label);
    }
    // Links between routers drawn as boxes (core–spine); links to tiles are counted on them.
    for link in &topo.links {
        let (a, b) = (link.a.index(), link.b.index());
        if let (Some(pa), Some(pb)) = (placed_routers.get(&a), placed_routers.get(&b)) {
            link_line(&mut svg, *pa, *pb, link.kind, link.up);
        }
    }
    for (i, d) in topo.devices.iter().enumerate() {
        let Some(&at) = placed_routers.get(&i) else {
            continue;
        };
        svg.group(&format!("router {} {}", d.name, d.address));
        device_box(
            &mut svg,
            at,
            ROUTER_FILL,
            ("#8aa4c2", 1.0, ""),
            [&d.name, &d.address.to_string()],
        );
        svg.end();
    }
    for (t, tile) in tiles.iter().enumerate() {
        let Some(at) = placed_tiles[t] else {
            continue;
        };
        let bad = tile.down > 0 || tile.links_down > 0;
        let (stroke, width) = if !tile.reflectors.is_empty() {
            (REFLECTOR, 2.5)
        } else if bad {
            (BAD, 1.5)
        } else {
            ("#7b8794", 1.0)
        };
        let mut tip = format!(
            "{unit} {} ({}): {} nodes",
            tile.name, tile.subtitle, tile.nodes
        );
        if tile.down > 0 {
            tip.push_str(&format!(", {} down", tile.down));
        }
        if tile.links_down > 0 {
            tip.push_str(&format!(", {} links down", tile.links_down));
        }
        if !tile.reflectors.is_empty() {
            tip.push_str(&format!(
                ", route reflectors {}",
                tile.reflectors.join(", ")
            ));
        }
        let total: usize = tile.sessions.iter().sum();
        if total > 0 {
            tip.push_str(&format!(
                "; session ends: {} Established, {} Connect, {} Idle",
                tile.sessions[0], tile.sessions[1], tile.sessions[2]
            ));
        }
        svg.group(&tip);
        svg.rect(
            (at.x, at.y, at.w, at.h),
            6.0,
            if bad { "#fbeaea" } else { "#ffffff" },
            stroke,
            width,
            "",
        );
        let chars = ((at.w - 8.0) / (11.0 * 0.6)) as usize;
        svg.text(
            (at.x + 6.0, at.y + 14.0),
            TextStyle::plain(11.0).bold(),
            &shorten(&tile.name, chars),
        );
        svg.text(
            (at.x + 6.0, at.y + 28.0),
            TextStyle::plain(10.0).fill(MUTED),
            &counted(tile.nodes, "node"),
        );
        let mut problems = Vec::new();
        if tile.down > 0 {
            problems.push(format!("{} down", tile.down));
        }
        if tile.links_down > 0 {
            problems.push(format!("{} link↓", tile.links_down));
        }
        if !problems.is_empty() {
            svg.text(
                (at.x + 6.0, at.y + 41.0),
                TextStyle::plain(10.0).fill(BAD).bold(),
                &shorten(&problems.join(", "), chars + 2),
            );
        }
        // The tile's session ends by state, as a bar along its foot.
        if total > 0 {
            let (bx, by, bw) = (at.x + 6.0, at.y + at.h - 12.0, at.w - 12.0);
            let mut x = bx;
            for (rank, (_, colour)) in STATES.iter().enumerate() {
                let w = bw * tile.sessions[rank] as f64 / total as f64;
                if w > 0.0 {
                    svg.rect((x, by, w, 6.0), 0.0, colour, "none", 0.0, "");
                }
                x += w;
            }
        }
        svg.end();
        if !tile.reflectors.is_empty() {
            rr_badge(&mut svg, at);
        }
    }
    // Sessions between tiles, bundled per (tile pair, state) and drawn with a width that
    // grows with the count; the non-Established first when there are too many.
    // (from key, to key, state rank) → (sessions, any reflected, any eBGP)
    let mut bundles: BTreeMap<BundleKey, (usize, bool, bool)> = BTreeMap::new();
    for s in sessions {
        let (Some(&da), Some(&db)) = (by_name.get(&*s.a), by_name.get(&*s.b)) else {
            continue;
        };
        let (ka, kb) = (
            key_of(&placed_routers, &tile_of_device, da),
            key_of(&placed_routers, &tile_of_device, db),
        );
        let (Some(ka), Some(kb)) = (ka, kb) else {
            continue;
        };
        if ka == kb {
            continue;
        }
        // A bundle runs from the reflector's side when there is one.
        let (from, to) = match &s.reflector {
            Some(r) if *r == s.b => (kb, ka),
            _ => (ka, kb),
        };
        let e = bundles
            .entry((from, to, state_rank(s.state)))
            .or_insert((0, false, false));
        e.0 += 1;
        e.1 |= s.reflector.is_some();
        e.2 |= s.session_type == "ebgp";
    }
    let mut chosen: Vec<_> = bundles.iter().collect();
    let left_out = chosen.len().saturating_sub(BUNDLES);
    chosen.sort_by_key(|(k, _)| std::cmp::Reverse(k.2));
    chosen.truncate(BUNDLES);
    chosen.sort_by_key(|(k, _)| (usize::from(k.2 != 0), **k));
    for (&(from, to, rank), &(count, reflected, ebgp)) in chosen {
        let (Some(a), Some(b)) = (box_of(from), box_of(to)) else {
            continue;
        };
        let state = STATES[rank].0;
        // A stand-in session from `a` (the reflector's side) to `b`.
        let row = SessionRow {
            a: "a".into(),
            b: "b".into(),
            session_type: if ebgp { "ebgp" } else { "ibgp" },
            reflector_client: reflected,
            reflector: reflected.then(|| "a".into()),
            state,
            reason: None,
            times_down: 0,
        };
        let width = 1.0 + (count as f64).log2().max(0.0) * 0.6;
        svg.group(&format!(
            "{count} {state} session{} between {} and {}",
            if count == 1 { "" } else { "s" },
            label_of(topo, &tiles, from),
            label_of(topo, &tiles, to),
        ));
        session_curve(&mut svg, a, b, &row, width, 0.12);
        svg.end();
    }
    let note = if left_out > 0 {
        format!(
            "{left_out} Established bundles not drawn (the first {BUNDLES} are); a bar at a tile's foot counts its session ends by state"
        )
    } else {
        "a bar at a tile's foot counts its session ends by state".to_string()
    };
    legend(&mut svg, legend_y, &note);
    svg.finish()
}

/// Where a session end is drawn: a router box (by device index) or a tile (after the
/// devices), so every end in one tile shares one key.
pub(super) fn key_of(
    routers: &BTreeMap<usize, Placed>,
    tile_of_device: &[Option<usize>],
    device: usize,
) -> Option<usize> {
    if routers.contains_key(&device) {
        return Some(device);
    }
    let t = tile_of_device.get(device).copied().flatten()?;
    Some(tile_of_device.len() + t)
}

pub(super) fn label_of(topo: &Topology, tiles: &[Tile], key: usize) -> String {
    match key.checked_sub(topo.devices.len()) {
        Some(t) => tiles.get(t).map(|t| t.name.clone()).unwrap_or_default(),
        None => topo
            .devices
            .get(key)
            .map(|d| d.name.clone())
            .unwrap_or_default(),
    }
}
