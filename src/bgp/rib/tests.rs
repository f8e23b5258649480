//! Unit tests of `rib.rs`: prefixes, candidates, states, the state table and advertisements.

use super::*;

#[test]
fn prefixes_are_interned_once_in_first_seen_order() {
    let mut p = PrefixTable::default();
    let a = p.intern("10.0.0.0/26".parse().unwrap());
    let b = p.intern("10.0.0.64/26".parse().unwrap());
    // Host bits are truncated, as BGP carries prefixes.
    assert_eq!(p.intern("10.0.0.5/26".parse().unwrap()), a);
    assert_eq!((a, b), (PrefixId(0), PrefixId(1)));
    assert_eq!(p.net(b).to_string(), "10.0.0.64/26");
}

#[test]
fn candidates_stay_sorted_and_upsert_detects_no_change() {
    let mut d = Destination::default();
    let attrs = Arc::new(PathAttributes::local(IpAddr::from([10, 0, 0, 1])));
    assert_eq!(
        d.upsert(RouteSource::Peer(SessionId(3)).into(), attrs.clone()),
        Upsert::Inserted(0)
    );
    assert_eq!(
        d.upsert(RouteSource::Local.into(), attrs.clone()),
        Upsert::Inserted(0)
    );
    assert_eq!(
        d.upsert(RouteSource::Peer(SessionId(1)).into(), attrs.clone()),
        Upsert::Inserted(1)
    );
    let order: Vec<_> = d.routes.iter().map(|r| r.source()).collect();
    assert_eq!(
        order,
        [
            RouteSource::Local,
            RouteSource::Peer(SessionId(1)),
            RouteSource::Peer(SessionId(3))
        ]
    );
    let same = Arc::new(PathAttributes::local(IpAddr::from([10, 0, 0, 1])));
    assert_eq!(d.upsert(RouteSource::Local.into(), same), Upsert::Unchanged);
    assert!(d.remove(RouteSource::Peer(SessionId(1)).into()));
    assert!(!d.remove(RouteSource::Peer(SessionId(1)).into()));
}

#[test]
fn a_candidate_is_sixteen_bytes_and_three_fit_inline() {
    assert_eq!(std::mem::size_of::<Route>(), 16);
    assert!(std::mem::size_of::<Destination>() <= 64);
    assert!(!Candidates::new().spilled());
    for source in [RouteSource::Local, RouteSource::Peer(SessionId(7))] {
        let attrs = Arc::new(PathAttributes::local(IpAddr::from([10, 0, 0, 1])));
        assert_eq!(Route::new(source, attrs).source(), source);
    }
}

#[test]
fn offered_paths_keep_their_ids_and_a_lone_best_under_id_0_costs_nothing() {
    let attrs = Arc::new(PathAttributes::local(IpAddr::from([10, 0, 0, 1])));
    let peer = |x: u32| RouteKey::from(RouteSource::Peer(SessionId(x)));
    let routes = |keys: &[RouteKey]| -> Vec<Route> {
        keys.iter().map(|k| Route::new(*k, attrs.clone())).collect()
    };
    let adv = |best: RouteKey, paths: Box<[OfferedPath]>| Advertised {
        key: best,
        attrs: attrs.clone(),
        exportable: true,
        paths,
    };
    let ids = |a: &Advertised| -> Vec<(RouteKey, u16)> {
        a.offered().map(|(k, id, _)| (k, id.0)).collect()
    };
    // One candidate, the best: nothing stored, offered under id 0.
    let one = adv(peer(1), offered_paths(&routes(&[peer(1)]), peer(1), None));
    assert!(one.paths.is_empty());
    assert_eq!(ids(&one), [(peer(1), 0)]);
    // A second path takes id 1; the first keeps 0.
    let two = adv(
        peer(1),
        offered_paths(&routes(&[peer(1), peer(2)]), peer(1), Some(&one)),
    );
    assert_eq!(ids(&two), [(peer(1), 0), (peer(2), 1)]);
    // The first goes: the second keeps id 1 (stored, as it is not id 0)...
    let left = adv(
        peer(2),
        offered_paths(&routes(&[peer(2)]), peer(2), Some(&two)),
    );
    assert_eq!(ids(&left), [(peer(2), 1)]);
    assert_eq!(left.paths.len(), 1);
    // ...and a newcomer takes the smallest id no kept path uses.
    let back = adv(
        peer(2),
        offered_paths(&routes(&[peer(2), peer(3)]), peer(2), Some(&left)),
    );
    assert_eq!(ids(&back), [(peer(2), 1), (peer(3), 0)]);
    assert!(!Advertised::same(&Some(left), &Some(back)));
}

#[test]
fn states_are_interned_by_identity_and_collection_keeps_what_is_held() {
    let a = Arc::new(PathAttributes::local(IpAddr::from([10, 0, 0, 1])));
    let same_value = Arc::new(PathAttributes::local(IpAddr::from([10, 0, 0, 1])));
    let state = |attrs: &Attrs, tag: Tag| State {
        held: [Held {
            attrs: attrs.clone(),
            tag,
            path: PathId(0),
            status: RouteStatus::Best(crate::bgp::BestBecause::OnlyCandidate),
        }]
        .into_iter()
        .collect(),
    };
    let mut states = States::default();
    let x = states.intern(state(&a, 1));
    assert_eq!(states.intern(state(&a, 1)), x, "the same state is one id");
    // Equal attributes behind another `Arc` are another state: sharing is by identity.
    let y = states.intern(state(&same_value, 1));
    let z = states.intern(state(&a, 2));
    assert_eq!((x, y, z), (StateId(1), StateId(2), StateId(3)));
    let step = Step {
        from: EMPTY,
        class: 65000,
        tag: 1,
        path: PathId(0),
        attrs: Step::address(Some(&a)),
    };
    states.remember(step, Some(a.clone()), (x, Outcome::Admitted));
    assert_eq!(states.recall(&step), Some((x, Outcome::Admitted)));
    // Two speakers hold z and x (in that order), one holds nothing: y goes, z and x are
    // renumbered in the order met, and the memo is forgotten.
    let mut held = [z, EMPTY, x, z];
    states.collect(held.iter_mut());
    assert_eq!(held, [StateId(1), EMPTY, StateId(2), StateId(1)]);
    assert_eq!(states.count(), 3);
    assert_eq!(states.get(StateId(1)).held[0].tag, 2);
    assert_eq!(states.intern(state(&a, 1)), StateId(2));
    assert_eq!(states.recall(&step), None);
}

#[test]
fn the_state_table_keeps_each_speaker_apart_and_allocates_only_where_something_is_held() {
    use crate::bgp::SpeakerId;
    let mut table = StateTable::default();
    // Nothing allocated for an empty state.
    table.set(SpeakerId(40), PrefixId(700), EMPTY);
    assert!(table.blocks.is_empty());
    // Speakers 16 and 17 share a tile (block 1); 3 is in block 0.
    table.set(SpeakerId(16), PrefixId(3), StateId(5));
    table.set(SpeakerId(17), PrefixId(3), StateId(6));
    table.set(SpeakerId(17), PrefixId(600), StateId(7));
    table.set(SpeakerId(3), PrefixId(1), StateId(8));
    assert_eq!(table.get(SpeakerId(16), PrefixId(3)), StateId(5));
    assert_eq!(table.get(SpeakerId(18), PrefixId(3)), EMPTY);
    assert_eq!(table.get(SpeakerId(16), PrefixId(600)), EMPTY);
    let held = |t: &StateTable, s: u32| -> Vec<(u32, u32)> {
        t.held(SpeakerId(s)).map(|(p, id)| (p.0, id.0)).collect()
    };
    assert_eq!(held(&table, 17), [(3, 6), (600, 7)]);
    assert_eq!(held(&table, 16), [(3, 5)]);
    table.clear(SpeakerId(17));
    assert_eq!(held(&table, 17), []);
    assert_eq!(
        held(&table, 16),
        [(3, 5)],
        "a neighbour in the tile keeps its own"
    );
    assert_eq!(held(&table, 3), [(1, 8)]);
    let live: Vec<u32> = table
        .slots_mut()
        .filter(|id| **id != EMPTY)
        .map(|id| id.0)
        .collect();
    assert_eq!(live, [8, 5]);
    // `slot_mut` reaches the slot `get` reads and `set` writes, and only where a tile is:
    // speaker 18 shares speaker 16's tile at prefix 3; prefix 600 of block 1 has a tile
    // (speaker 17 held it before the clear); prefix 300 of block 0 has none.
    *table.slot_mut(SpeakerId(18), PrefixId(3)).expect("a tile") = StateId(9);
    assert_eq!(table.get(SpeakerId(18), PrefixId(3)), StateId(9));
    assert_eq!(table.get(SpeakerId(16), PrefixId(3)), StateId(5));
    assert_eq!(
        table.slot_mut(SpeakerId(17), PrefixId(600)).copied(),
        Some(EMPTY)
    );
    assert!(table.slot_mut(SpeakerId(3), PrefixId(300)).is_none());
}

proptest::proptest! {
    /// Reading the table a block at a time ([`StateTable::lines`]) gives every speaker
    /// what [`StateTable::held`] gives it, for any sets and clears.
    #[test]
    fn block_lines_give_each_speaker_what_it_holds(
        ops in proptest::collection::vec((0u32..40, 0u32..700, 0u32..4, proptest::bool::weighted(0.05)), 0..200),
        extra in 0usize..300,
    ) {
        use crate::bgp::SpeakerId;
        let mut table = StateTable::default();
        for (s, p, id, clear) in ops {
            if clear {
                table.clear(SpeakerId(s));
            } else {
                table.set(SpeakerId(s), PrefixId(p), StateId(id));
            }
        }
        let bound = table.prefix_bound();
        for s in 0..48u32 {
            let held: Vec<(PrefixId, StateId)> = table.held(SpeakerId(s)).collect();
            proptest::prop_assert!(held.iter().all(|(p, _)| p.index() < bound));
            // Any bound at least the table's gives the same; lines past the tiles are empty.
            let by_lines: Vec<(PrefixId, StateId)> = table
                .lines(s as usize / LANES, bound + extra)
                .enumerate()
                .map(|(p, line)| (PrefixId(p as u32), line[s as usize % LANES]))
                .filter(|(_, id)| *id != EMPTY)
                .collect();
            proptest::prop_assert_eq!(&by_lines, &held);
            proptest::prop_assert_eq!(table.lines(s as usize / LANES, bound + extra).count(), bound + extra);
        }
    }
}

/// What a node advertises for its own block: its local route, exportable.
fn local_advertised() -> Advertised {
    Advertised {
        key: RouteSource::Local.into(),
        attrs: Arc::new(PathAttributes::local(IpAddr::from([10, 0, 0, 1]))),
        exportable: true,
        paths: Box::default(),
    }
}

/// A stamp names one stored advertisement: storing another (even an equal one) gives a
/// new stamp, storing nothing over nothing does not, and a wiped RIB never gives an old
/// stamp again (views computed from the old advertisements must not match).
#[test]
fn every_stored_advertisement_has_a_stamp_of_its_own() {
    let mut rib = Rib::default();
    let adv = local_advertised();
    let stamp = |rib: &Rib, p: u32| rib.stamped(PrefixId(p)).map(|(_, at)| at);
    rib.set_advertised(PrefixId(5), Some(adv.clone()));
    let first = stamp(&rib, 5).expect("stored");
    rib.set_advertised(PrefixId(300), Some(adv.clone()));
    assert_eq!(stamp(&rib, 5), Some(first), "another prefix's change");
    rib.set_advertised(PrefixId(7), None);
    assert_eq!(stamp(&rib, 5), Some(first));
    rib.set_advertised(PrefixId(5), Some(adv.clone()));
    let second = stamp(&rib, 5).expect("stored");
    assert!(second > first, "an equal advertisement stored again");
    let seen: Vec<(u32, u64)> = rib
        .stamped_advertisements()
        .map(|(p, _, at)| (p.0, at))
        .collect();
    assert_eq!(seen, [(5, second), (300, first + 1)]);
    rib.clear();
    rib.set_advertised(PrefixId(5), Some(adv));
    assert!(stamp(&rib, 5).expect("stored") > second, "after a wipe");
    rib.set_advertised(PrefixId(5), None);
    assert_eq!(stamp(&rib, 5), None);
}

/// `may_originate` is `false` only for prefixes the speaker never originated: one bit per
/// prefix id modulo 64, set by `note_local` and kept through a wipe (a superset costs a
/// state read, a missing bit would lose the speaker's own route's export).
#[test]
fn a_rib_says_which_prefixes_it_may_originate() {
    let mut rib = Rib::default();
    assert!(
        (0..200).all(|p| !rib.may_originate(PrefixId(p))),
        "nothing yet"
    );
    rib.note_local(PrefixId(5));
    rib.note_local(PrefixId(130));
    for p in [5, 130] {
        assert!(rib.may_originate(PrefixId(p)), "originated {p}");
    }
    // 69 and 2 share those bits (5 + 64, 130 - 128): maybe; every other id: no.
    for p in [69, 2, 66] {
        assert!(rib.may_originate(PrefixId(p)), "shares a bit: {p}");
    }
    let others = (0..300).filter(|p| p % 64 != 5 && p % 64 != 2);
    for p in others {
        assert!(!rib.may_originate(PrefixId(p)), "never originated {p}");
    }
    rib.clear();
    assert!(rib.may_originate(PrefixId(5)), "kept through a wipe");
}

#[test]
fn a_rib_keeps_advertisements_in_chunks_that_exist_only_where_something_was_advertised() {
    let mut rib = Rib::default();
    let adv = local_advertised();
    rib.set_advertised(PrefixId(900), None);
    assert!(rib.advertised.is_empty());
    rib.set_advertised(PrefixId(600), Some(adv.clone()));
    rib.set_advertised(PrefixId(3), Some(adv.clone()));
    let advertised: Vec<u32> = rib.advertisements().map(|(p, _)| p.0).collect();
    assert_eq!(advertised, [3, 600]);
    assert!(rib.advertised[1].is_none(), "no chunk for prefixes 256–511");
    assert_eq!(
        rib.advertised_bits,
        1 << 3 | 1 << (600 % 64),
        "prefixes 3 and 600"
    );
    // 664 shares 600's bit: looked up, found empty; then there.
    assert!(rib.advertised(PrefixId(664)).is_none());
    rib.set_advertised(PrefixId(664), Some(adv.clone()));
    assert!(rib.advertised(PrefixId(664)).is_some());
    assert!(rib.advertised(PrefixId(600)).is_some());
    rib.set_advertised(PrefixId(664), None);
    assert!(rib.advertised(PrefixId(664)).is_none());
    rib.set_advertised(PrefixId(600), None);
    assert!(rib.advertised(PrefixId(600)).is_none());
    let ids = |v: &[u32]| v.iter().map(|&i| PrefixId(i)).collect::<Vec<_>>();
    assert_eq!(either(&ids(&[1, 3, 7]), &ids(&[3, 4])), ids(&[1, 3, 4, 7]));
    assert_eq!(either(&[], &ids(&[2])), ids(&[2]));
}

#[test]
fn attributes_render_like_birdc() {
    let mut a = PathAttributes::local(IpAddr::from([10, 0, 0, 1]));
    a.as_path = vec![65001, 65000];
    a.originator_id = Some(IpAddr::from([10, 0, 0, 9]));
    assert_eq!(
        a.to_string(),
        "via 10.0.0.1 [65001 65000] IGP localpref 100 med 0 originator 10.0.0.9"
    );
}

proptest::proptest! {
    /// Steps are equal exactly when every field is ([`Step`]'s comparison folds the fields
    /// into words): fields drawn from a few values each, so that most pairs share some
    /// fields, and values at the top of each field's range, where a fold could spill.
    #[test]
    fn steps_are_equal_exactly_when_every_field_is(
        a in (0u32..3, 0u32..3, 0u32..3, 0u16..3, 0usize..3),
        b in (0u32..3, 0u32..3, 0u32..3, 0u16..3, 0usize..3),
        high in proptest::bool::ANY,
    ) {
        let step = |(from, class, tag, path, attrs): (u32, u32, u32, u16, usize)| {
            let top = |v: u32| if high { u32::MAX - v } else { v };
            Step {
                from: StateId(top(from)),
                class: top(class),
                tag: top(tag),
                path: PathId(if high { u16::MAX - path } else { path }),
                attrs: if high { usize::MAX - attrs } else { attrs },
            }
        };
        let (x, y) = (step(a), step(b));
        let fieldwise = x.from == y.from
            && x.class == y.class
            && x.tag == y.tag
            && x.path == y.path
            && x.attrs == y.attrs;
        proptest::prop_assert_eq!(x == y, fieldwise);
        proptest::prop_assert_eq!(x == y, a == b);
    }
}
