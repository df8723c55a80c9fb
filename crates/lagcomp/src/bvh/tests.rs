//! Tests of the trees: every way of filling and walking them against brute force.

use super::*;
use crate::math::ray_recip;

fn boxes(n: usize, shift: f32) -> Vec<Aabb> {
    (0..n)
        .map(|i| {
            let c = Vec3::new(
                (i % 17) as f32 * 3.0 + shift,
                (i / 17) as f32 * 3.0,
                (i % 5) as f32,
            );
            Aabb::around_sphere(c, 0.5)
        })
        .collect()
}

/// The items whose boxes the ray passes within 100: the oracle a tree walk must match.
fn linear_scan(bounds: &[Aabb], origin: Vec3, inv: Vec3) -> Vec<u32> {
    (0..bounds.len() as u32)
        .filter(|&i| {
            bounds[i as usize]
                .ray_interval(origin, inv, 100.0)
                .is_some()
        })
        .collect()
}

/// The items a tree walk visits whose own boxes the ray passes, sorted.
fn cast_all(
    cast: impl Fn(&mut dyn FnMut(u32, f32) -> f32),
    bounds: &[Aabb],
    origin: Vec3,
    inv: Vec3,
) -> Vec<u32> {
    let mut found = Vec::new();
    cast(&mut |item, t| {
        if bounds[item as usize]
            .ray_interval(origin, inv, 100.0)
            .is_some()
        {
            found.push(item);
        }
        t
    });
    found.sort_unstable();
    found
}

#[test]
fn cast_finds_exactly_the_boxes_a_linear_scan_finds() {
    let bounds = boxes(300, 0.0);
    let mut bvh = Bvh::default();
    bvh.build(0..300, &bounds);
    for k in 0..50 {
        let origin = Vec3::new(-5.0, k as f32 * 1.3 - 3.0, 2.0);
        let dir = Vec3::new(1.0, 0.05 * k as f32, -0.02).normalize();
        let inv = ray_recip(dir);
        let found = cast_all(
            |v| bvh.cast(origin, inv, 0.0, 100.0, &mut *v),
            &bounds,
            origin,
            inv,
        );
        let expected = linear_scan(&bounds, origin, inv);
        assert_eq!(found, expected, "ray {k}");
    }
}

/// Both forms, for tests that must hold for each: `(flat, name)`.
const SHAPES: [(bool, &str); 2] = [(false, "tree"), (true, "flat")];

#[test]
fn temporal_boxes_span_both_bracketing_frames() {
    for (flat, shape) in SHAPES {
        temporal_boxes_span_both_bracketing_frames_in(TemporalBvh::shaped(flat), shape);
    }
}

fn temporal_boxes_span_both_bracketing_frames_in(mut bvh: TemporalBvh, shape: &str) {
    // Frame 0 at the grid, frame 1 shifted by 40 along x; a query spanning both must
    // find the boxes of either, one at a single frame only that frame's.
    let (f0, f1) = (boxes(200, 0.0), boxes(200, 40.0));
    bvh.build(2, 0..200, |i| f0[i as usize].center());
    bvh.refit_frame(Kernels::detect(), 0, None, |i| {
        NodeBox::from_aabb(f0[i as usize])
    });
    bvh.refit_frame(Kernels::detect(), 1, Some(0), |i| {
        NodeBox::from_aabb(f1[i as usize])
    });
    let union: Vec<Aabb> = f0.iter().zip(&f1).map(|(a, b)| a.union(b)).collect();
    for k in 0..40 {
        let origin = Vec3::new(-5.0, k as f32 * 1.7 - 3.0, 2.0);
        let dir = Vec3::new(1.0, 0.03 * k as f32, -0.02).normalize();
        let inv = ray_recip(dir);
        // Frame 0's span reaches frame 1; frame 1 (the newest) spans only itself.
        let span = |first, count| SpanRange { first, count };
        for (frames, bounds) in [
            (span(0, 1), &union),
            (span(1, 1), &f1),
            (span(0, 2), &union),
        ] {
            let found = cast_all(
                |v| {
                    bvh.cast(
                        Kernels::detect(),
                        frames,
                        origin,
                        inv,
                        0.0,
                        100.0,
                        |_| {},
                        &mut *v,
                    )
                },
                bounds,
                origin,
                inv,
            );
            let expected = linear_scan(bounds, origin, inv);
            assert_eq!(found, expected, "{shape}: ray {k} frames {frames:?}");
        }
    }
    let query = Aabb::around_sphere(f1[7].center(), 0.1);
    let span = |first, count| SpanRange { first, count };
    let mut found = Vec::new();
    bvh.overlap(span(1, 1), &query, |i| {
        if f1[i as usize].intersects(&query) {
            found.push(i);
        }
    });
    assert_eq!(found, vec![7], "{shape}");
}

/// The median splits of [`Topology::build`] done the slow way, for the tests to compare
/// with: `placed` holds (centroid, place in the input, item); each node's items are
/// ordered by `order(slice, axis, mid)` on the longest axis of their centroids and cut
/// at `split_at`. Returns the items in the tree's order.
fn reference_splits(
    mut placed: Vec<(Vec3, usize, u32)>,
    order: impl Fn(&mut [(Vec3, usize, u32)], usize, usize),
) -> Vec<u32> {
    let mut pending = vec![(0, placed.len())];
    while let Some((start, end)) = pending.pop() {
        let slice = &mut placed[start..end];
        if slice.len() <= LEAF_SIZE {
            continue;
        }
        let (lo, hi) = slice
            .iter()
            .fold((Vec3::INFINITY, Vec3::NEG_INFINITY), |(lo, hi), (c, ..)| {
                (lo.min(*c), hi.max(*c))
            });
        let e = hi - lo;
        let axis = if e.x >= e.y && e.x >= e.z {
            0
        } else if e.y >= e.z {
            1
        } else {
            2
        };
        let mid = split_at(slice.len());
        order(slice, axis, mid);
        pending.push((start, start + mid));
        pending.push((start + mid, end));
    }
    placed.iter().map(|p| p.2).collect()
}

/// The median splits on `<` place every item where splits on `f32::total_cmp` (what
/// the build used before) do, for centroids with distinct coordinates, including
/// negative ones and clusters (the same tree, so queries walk the same nodes).
#[test]
fn median_splits_place_items_as_total_order_splits_do() {
    use rand::{Rng as _, SeedableRng as _};
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(0x5e1ec7);
    for n in [2, 3, 9, 17, 64, 333, 1000] {
        let centroids: Vec<Vec3> = (0..n)
            .map(|i| {
                let cluster = Vec3::splat((i % 3) as f32 * 40.0 - 40.0);
                cluster
                    + Vec3::new(
                        rng.random_range(-30.0..30.0),
                        rng.random_range(-3.0..3.0),
                        rng.random_range(-30.0..30.0),
                    )
            })
            .collect();
        let mut topology = Topology::default();
        topology.build(0..n as u32, |i| centroids[i as usize]);
        // The reference: the same median splits, compared with `total_cmp`.
        let placed = (0..n as u32)
            .map(|i| (centroids[i as usize], 0, i))
            .collect();
        let expected = reference_splits(placed, |slice, axis, mid| {
            slice.select_nth_unstable_by(mid, |a, b| a.0[axis].total_cmp(&b.0[axis]));
        });
        assert_eq!(topology.items, expected, "{n} items");
    }
}

/// Ties, equal and non-finite centroids, and sizes around the split rounding: the
/// presorted build splits each node where a sort of its items by (coordinate, place in
/// the input) does, non-finite centroids at the origin, so that every build over the
/// same input gives the same tree however its coordinates tie.
#[test]
fn median_splits_break_ties_by_input_order() {
    use rand::{Rng as _, SeedableRng as _};
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(0x71e5);
    let mut cases: Vec<Vec<Vec3>> = Vec::new();
    // Every size around the rounding to fours (8, 9, 12, 16, 17, ...), coordinates on
    // a coarse grid so that most of them tie, with a few NaN and infinite centroids.
    for n in (1..=40).chain([63, 64, 65, 257]) {
        cases.push(
            (0..n)
                .map(|_| match rng.random_range(0..12) {
                    0 => Vec3::new(f32::NAN, 1.0, 2.0),
                    1 => Vec3::new(3.0, f32::INFINITY, -1.0),
                    2 => Vec3::new(-0.0, 0.0, -0.0),
                    _ => Vec3::new(
                        rng.random_range(-3..=3) as f32,
                        rng.random_range(-1..=1) as f32,
                        rng.random_range(-3..=3) as f32,
                    ),
                })
                .collect(),
        );
    }
    // All centroids equal.
    cases.push(vec![Vec3::splat(5.0); 37]);
    for centroids in &cases {
        let n = centroids.len();
        // Items given in a shuffled order, so that the place differs from the item.
        let mut input: Vec<u32> = (0..n as u32).collect();
        for k in (1..n).rev() {
            input.swap(k, rng.random_range(0..=k));
        }
        let mut topology = Topology::default();
        topology.build(input.iter().copied(), |i| centroids[i as usize]);
        let at = |i: u32| {
            let c = centroids[i as usize];
            if c.is_finite() { c } else { Vec3::ZERO }
        };
        let placed = input
            .iter()
            .enumerate()
            .map(|(place, &i)| (at(i), place, i))
            .collect();
        let expected = reference_splits(placed, |slice, axis, _| {
            slice.sort_by(|a, b| a.0[axis].total_cmp(&b.0[axis]).then(a.1.cmp(&b.1)));
        });
        assert_eq!(topology.items, expected, "{n} items: {centroids:?}");
        assert_eq!(topology.len(), 2 * n - 1, "{n} items");
    }
}

/// The boxes of `frames` consecutive frames, item `i` absent from frame `f` when
/// `(i + f) % 7 == 0`.
fn moving_frames(items: usize, frames: usize) -> Vec<Vec<NodeBox>> {
    (0..frames)
        .map(|f| {
            boxes(items, f as f32 * 0.7)
                .into_iter()
                .enumerate()
                .map(|(i, b)| {
                    if (i + f).is_multiple_of(7) {
                        NodeBox::EMPTY
                    } else {
                        NodeBox::from_aabb(b)
                    }
                })
                .collect()
        })
        .collect()
}

#[test]
fn frames_grown_tick_by_tick_match_frames_refitted_from_scratch() {
    for (flat, shape) in SHAPES {
        frames_grown_tick_by_tick_in(flat, shape);
    }
}

fn frames_grown_tick_by_tick_in(flat: bool, shape: &str) {
    // A ring of 5 frames, 12 frames recorded through it: leaf by leaf (clear, grow,
    // finish), against a rebuild that refits every frame in the ring from the items.
    let (items, ring, frames) = (37, 5, 12);
    let boxes_at = moving_frames(items, frames);
    let mut grown = TemporalBvh::shaped(flat);
    let _ = shape;
    grown.build(ring, 0..items as u32, |i| {
        boxes_at[0][i as usize].aabb().center()
    });
    for (f, frame_boxes) in boxes_at.iter().enumerate() {
        let slot = f % ring;
        grown.clear_frame(slot);
        for (i, b) in frame_boxes.iter().enumerate() {
            if *b != NodeBox::EMPTY {
                grown.grow_leaf(slot, i, *b);
            }
        }
        grown.finish_frame(Kernels::detect(), slot, (f > 0).then(|| (f - 1) % ring));
        if f + 1 < ring {
            continue;
        }
        let mut scratch = TemporalBvh::shaped(flat);
        scratch.build(ring, 0..items as u32, |i| {
            boxes_at[0][i as usize].aabb().center()
        });
        for (g, frame_boxes) in boxes_at.iter().enumerate().take(f + 1).skip(f + 1 - ring) {
            let previous = (g > f + 1 - ring).then(|| (g - 1) % ring);
            scratch.refit_frame(Kernels::detect(), g % ring, previous, |i| {
                frame_boxes[i as usize]
            });
        }
        assert_eq!(grown.is_flat(), flat, "{shape}");
        assert_eq!(grown.spans, scratch.spans, "{shape}: after frame {f}");
        // The rebuild's way: every frame's leaves item by item, then each frame's
        // internal nodes, oldest first.
        let mut rebuilt = TemporalBvh::shaped(flat);
        rebuilt.build(ring, 0..items as u32, |i| {
            boxes_at[0][i as usize].aabb().center()
        });
        let frame_at = |slot: usize| (f + 1 - ring..=f).find(|g| g % ring == slot);
        let box_at = |g: usize, i: usize| boxes_at[g][i];
        for i in 0..items {
            rebuilt.set_leaf_in_every_frame(
                i,
                (0..ring).map(|slot| frame_at(slot).map_or(NodeBox::EMPTY, |g| box_at(g, i))),
            );
        }
        for g in f + 1 - ring..=f {
            rebuilt.finish_frame(
                Kernels::detect(),
                g % ring,
                (g > f + 1 - ring).then(|| (g - 1) % ring),
            );
        }
        assert_eq!(
            rebuilt.spans, scratch.spans,
            "{shape}: rebuilt after frame {f}"
        );
        if flat {
            // Each lane's span is its item's boxes in its frame and the next (the
            // newest frame: its own); lanes past the items are empty.
            let bits = grown.span_bits();
            let stride = grown.stride;
            assert_eq!(bits.len(), ring * stride);
            for g in f + 1 - ring..=f {
                let next = (g + 1).min(f);
                for lane in 0..stride {
                    let expected = grown.lane_item.get(lane).map_or(NodeBox::EMPTY, |&i| {
                        boxes_at[g][i as usize].union(&boxes_at[next][i as usize])
                    });
                    assert_eq!(
                        bits[(g % ring) * stride + lane],
                        expected.as_array().map(f32::to_bits),
                        "flat: frame {g} lane {lane}"
                    );
                }
            }
            continue;
        }
        // And each child's span is the union of its items' boxes in its frame and the
        // next (the newest frame: its own boxes); unused children are empty.
        let n = grown.children.len();
        let mut seen = vec![false; items];
        for g in f + 1 - ring..=f {
            let next = (g + 1).min(f);
            for (node_index, links) in grown.children.iter().enumerate() {
                for (lane, &link) in links.iter().enumerate() {
                    let mut under = Vec::new();
                    let mut stack = vec![link];
                    while let Some(x) = stack.pop() {
                        if x == NO_CHILD {
                            continue;
                        } else if x & ITEM != 0 {
                            under.push(x & !ITEM);
                        } else {
                            stack.extend_from_slice(&grown.children[x as usize]);
                        }
                    }
                    if node_index == 0 {
                        for &i in &under {
                            seen[i as usize] = true;
                        }
                    }
                    let expected = under.iter().fold(NodeBox::EMPTY, |acc, &i| {
                        acc.union(&boxes_at[g][i as usize])
                            .union(&boxes_at[next][i as usize])
                    });
                    let got = grown.spans[(g % ring) * n + node_index].lane(lane);
                    assert_eq!(got, expected, "frame {g} node {node_index} lane {lane}");
                }
            }
        }
        // Every item hangs under the root exactly once.
        assert!(seen.iter().all(|&s| s), "after frame {f}");
    }
}

#[test]
fn a_spawn_goes_beside_the_nearest_leaf_even_when_the_first_leaf_is_empty() {
    // 40 items in a row, 10 apart; in the frame of the spawn the first leaf the
    // insertion scans belongs to an item not recorded there (its box empty).
    let items = 40u32;
    let centre = |i: u32| Vec3::new(i as f32 * 10.0, 0.0, 0.0);
    let mut tree = TemporalBvh::shaped(false);
    tree.build(2, 0..items, centre);
    let first_scanned = tree.children[..tree.linked()]
        .iter()
        .flatten()
        .find(|&&link| link != NO_CHILD && link & ITEM != 0)
        .map(|&link| link & !ITEM)
        .expect("a tree of 40 items has leaves");
    for i in (0..items).filter(|&i| i != first_scanned) {
        let b = NodeBox::from_aabb(Aabb::around_sphere(centre(i), 0.5));
        tree.grow_leaf(0, i as usize, b);
    }
    tree.finish_frame(Kernels::detect(), 0, None);
    // The far end of the row from the empty leaf's item: a spawn just beside item `near`.
    let near = if first_scanned < items / 2 {
        items - 3
    } else {
        2
    };
    let at = centre(near) + Vec3::new(1.0, 0.0, 0.0);
    let spawn = NodeBox::from_aabb(Aabb::around_sphere(at, 0.5));
    assert!(tree.insert(items, at, 0, spawn));
    let spare = tree.linked() - 1;
    assert_eq!(
        tree.children[spare][..2],
        [ITEM | near, ITEM | items],
        "the spawn's sibling is the item nearest to it (the empty leaf was item {first_scanned})"
    );
}

#[test]
fn a_rebuild_to_another_shape_leaves_no_stale_boxes() {
    // Each form into itself, and (chosen by size) a tree into the flat form and back.
    let big = FLAT_MAX_ITEMS + 40;
    for (shape, before, after, flat_after) in [
        (Shape::Tree, 17, 6, false),
        (Shape::Flat, 17, 6, true),
        (Shape::BySize, big, 6, true),
        (Shape::BySize, 9, big, false),
    ] {
        let bvh = TemporalBvh {
            shape,
            ..TemporalBvh::default()
        };
        rebuild_leaves_no_stale_boxes_in(bvh, before, after, flat_after);
    }
}

fn rebuild_leaves_no_stale_boxes_in(
    mut bvh: TemporalBvh,
    before: usize,
    after: usize,
    flat_after: bool,
) {
    // `before` items fill more (or other) lanes than `after` do; after the rebuild,
    // no walk may find a lane the new shape does not use.
    let ring = 3;
    let many = boxes(before, 0.0);
    bvh.build(ring, 0..before as u32, |i| many[i as usize].center());
    for f in 0..ring {
        bvh.refit_frame(Kernels::detect(), f, f.checked_sub(1), |i| {
            NodeBox::from_aabb(many[i as usize])
        });
    }
    let few = boxes(after, 0.5);
    bvh.build(ring, 0..after as u32, |i| few[i as usize].center());
    assert_eq!(bvh.is_flat(), flat_after, "{before} -> {after}");
    for (i, b) in few.iter().enumerate() {
        bvh.set_leaf_in_every_frame(i, std::iter::repeat(NodeBox::from_aabb(*b)));
    }
    for f in 0..ring {
        bvh.finish_frame(Kernels::detect(), f, f.checked_sub(1));
    }
    for k in 0..60 {
        let origin = Vec3::new(-5.0, k as f32 * 0.9 - 3.0, (k % 5) as f32);
        let inv = ray_recip(Vec3::new(1.0, 0.02 * k as f32, 0.01).normalize());
        for count in [1, 2] {
            let span = SpanRange { first: 0, count };
            let mut found = Vec::new();
            bvh.cast(
                Kernels::detect(),
                span,
                origin,
                inv,
                0.1,
                100.0,
                |_| {},
                |i, t| {
                    found.push(i);
                    t
                },
            );
            assert!(
                found.iter().all(|&i| (i as usize) < after),
                "ray {k}: {found:?}"
            );
            found.sort_unstable();
            let expected: Vec<u32> = (0..after as u32)
                .filter(|&i| {
                    few[i as usize]
                        .inflated(0.1)
                        .ray_interval(origin, inv, 100.0)
                        .is_some()
                })
                .collect();
            assert_eq!(found, expected, "{before} -> {after}: ray {k}");
        }
    }
}

#[test]
fn every_visited_item_is_announced_before_its_visit() {
    for (flat, shape) in SHAPES {
        every_visited_item_is_announced_in(TemporalBvh::shaped(flat), shape);
    }
}

fn every_visited_item_is_announced_in(mut bvh: TemporalBvh, shape: &str) {
    // `ahead` is what a trace prefetches by: it must hear of each item before the
    // visit, for every span count and margin, and a shrinking reach may skip items
    // it announced but never visit one it did not.
    let ring = 2;
    let bounds = boxes(200, 0.0);
    bvh.build(ring, 0..200, |i| bounds[i as usize].center());
    for f in 0..ring {
        bvh.refit_frame(Kernels::detect(), f, f.checked_sub(1), |i| {
            NodeBox::from_aabb(bounds[i as usize])
        });
    }
    let mut visits = 0;
    for k in 0..80 {
        let origin = Vec3::new(-5.0, k as f32 * 0.4 - 3.0, (k % 7) as f32 * 0.5);
        let inv = ray_recip(Vec3::new(1.0, 0.03 * (k % 11) as f32, -0.02).normalize());
        for (count, margin, shrink) in [(1, 0.0, false), (1, 0.1, true), (2, 0.0, true)] {
            let span = SpanRange { first: 0, count };
            let announced = std::cell::RefCell::new(Vec::new());
            bvh.cast(
                Kernels::detect(),
                span,
                origin,
                inv,
                margin,
                100.0,
                |i| announced.borrow_mut().push(i),
                |i, t| {
                    assert!(
                        announced.borrow().contains(&i),
                        "{shape}: ray {k}: {i} unannounced"
                    );
                    visits += 1;
                    if shrink { t * 0.9 } else { t }
                },
            );
        }
    }
    assert!(visits > 100, "{shape}: the rays visit items: {visits}");
}

/// `count` frames of random boxes for `items` items (an item absent from a frame now
/// and then), recorded tick by tick into a ring of `ring` slots in the given form.
fn random_history(
    rng: &mut rand_pcg::Pcg64Mcg,
    items: usize,
    ring: usize,
    count: usize,
    flat: bool,
) -> (TemporalBvh, Vec<Vec<NodeBox>>) {
    use rand::Rng as _;
    let side = (items as f32).sqrt() * 6.0;
    let mut at: Vec<Vec3> = (0..items)
        .map(|_| {
            Vec3::new(
                rng.random_range(0.0..side),
                rng.random_range(0.0..side),
                0.0,
            )
        })
        .collect();
    let mut frames = Vec::new();
    for _ in 0..count {
        let boxes: Vec<NodeBox> = at
            .iter_mut()
            .map(|c| {
                *c += Vec3::new(
                    rng.random_range(-0.3..0.3),
                    rng.random_range(-0.3..0.3),
                    0.0,
                );
                if rng.random_range(0..20) == 0 {
                    return NodeBox::EMPTY;
                }
                let half = Vec3::new(0.4, 0.4, 1.0) * rng.random_range(0.5..1.5);
                NodeBox::from_aabb(Aabb::new(*c - half, *c + half))
            })
            .collect();
        frames.push(boxes);
    }
    let mut bvh = TemporalBvh::shaped(flat);
    bvh.build(ring, 0..items as u32, |i| at[i as usize]);
    for (f, boxes) in frames.iter().enumerate() {
        let slot = f % ring;
        bvh.clear_frame(slot);
        let mut leaves = bvh.frame_leaves(slot);
        for (i, b) in boxes.iter().enumerate() {
            if *b != NodeBox::EMPTY {
                leaves.set(i, *b);
            }
        }
        bvh.finish_frame(Kernels::detect(), slot, (f > 0).then(|| (f - 1) % ring));
    }
    assert_eq!(bvh.is_flat(), flat);
    (bvh, frames)
}

#[test]
fn flat_and_tree_forms_find_the_same_items_and_answers() {
    use rand::{Rng as _, SeedableRng as _};
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(13);
    let (ring, recorded) = (4, 9);
    let mut visits = 0;
    for scene in 0..24 {
        let items = [1, 3, 8, 9, 31, 64, 100, 200, 256][scene % 9];
        let seed = rng.random::<u64>();
        let histories = [false, true].map(|flat| {
            let mut scene_rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
            random_history(&mut scene_rng, items, ring, recorded, flat)
        });
        let frames = &histories[0].1;
        let side = (items as f32).sqrt() * 6.0;
        for k in 0..60 {
            let origin = Vec3::new(
                rng.random_range(-5.0..side + 5.0),
                rng.random_range(-5.0..side + 5.0),
                rng.random_range(-2.0..2.0),
            );
            let aim = Vec3::new(
                rng.random_range(0.0..side),
                rng.random_range(0.0..side),
                0.0,
            );
            let dir = (aim - origin).normalize();
            let inv = ray_recip(dir);
            let margin = if k % 3 == 0 {
                0.0
            } else {
                rng.random_range(0.0..0.5)
            };
            let reach = rng.random_range(5.0..2.0 * side);
            // A range of the ring: frames `g0..g0 + count`, the last one's span reaching
            // the next recorded frame if there is one.
            let g0 = rng.random_range(recorded - ring..recorded);
            let count = rng.random_range(1..=(recorded - g0).min(3));
            let range = SpanRange {
                first: g0 % ring,
                count,
            };
            let last = (g0 + count).min(recorded - 1);
            let span_of =
                |i: usize| (g0..=last).fold(NodeBox::EMPTY, |acc, g| acc.union(&frames[g][i]));
            let label = format!("scene {scene} ({items} items) ray {k}");
            // Every item passed, no shrinking: exactly the items whose span box
            // (grown by the margin) the ray passes within the reach.
            let expected: Vec<u32> = (0..items as u32)
                .filter(|&i| {
                    let b = span_of(i as usize);
                    b != NodeBox::EMPTY
                        && b.ray_near(origin.into(), inv.into(), margin, reach)
                            .is_some()
                })
                .collect();
            let mut order = Vec::new();
            let passed = histories.each_ref().map(|(bvh, _)| {
                let mut found = Vec::new();
                bvh.cast(
                    Kernels::detect(),
                    range,
                    origin,
                    inv,
                    margin,
                    reach,
                    |_| {},
                    |i, t| {
                        found.push(i);
                        t
                    },
                );
                if bvh.is_flat() {
                    order.clone_from(&found);
                }
                found.sort_unstable();
                found
            });
            assert_eq!(passed[0], expected, "tree: {label}");
            assert_eq!(passed[1], expected, "flat: {label}");
            visits += expected.len();
            // The flat form visits by entry distance.
            let entry = |i: u32| {
                span_of(i as usize)
                    .ray_near(origin.into(), inv.into(), margin, reach)
                    .expect("a visited item's box is passed")
            };
            for pair in order.windows(2) {
                assert!(
                    entry(pair[0]) <= entry(pair[1]),
                    "flat order: {label}: {order:?}"
                );
            }
            // A closest-hit search that shrinks the reach (hit: entering the item's
            // own box in the range's first frame) ends with the same hit either way.
            let closest = histories.each_ref().map(|(bvh, _)| {
                let mut best: Option<(f32, u32)> = None;
                bvh.cast(
                    Kernels::detect(),
                    range,
                    origin,
                    inv,
                    margin,
                    reach,
                    |_| {},
                    |i, t| {
                        let own = frames[g0][i as usize];
                        // (An empty box's slab test passes at 0: it is no hit.)
                        let Some(d) = (own != NodeBox::EMPTY)
                            .then(|| own.ray_near(origin.into(), inv.into(), margin, t))
                            .flatten()
                        else {
                            return t;
                        };
                        if best.is_none_or(|b| (d, i) < b) {
                            best = Some((d, i));
                        }
                        d
                    },
                );
                best
            });
            assert_eq!(closest[0], closest[1], "closest: {label}");
            // Overlaps: the same items, exactly those whose span box meets the query.
            let centre = Vec3::new(
                rng.random_range(0.0..side),
                rng.random_range(0.0..side),
                0.0,
            );
            let query = Aabb::around_sphere(centre, rng.random_range(0.1..4.0));
            let expected: Vec<u32> = (0..items as u32)
                .filter(|&i| {
                    let b = span_of(i as usize);
                    b != NodeBox::EMPTY && b.aabb().intersects(&query)
                })
                .collect();
            for (bvh, _) in &histories {
                let mut found = Vec::new();
                bvh.overlap(range, &query, |i| found.push(i));
                found.sort_unstable();
                assert_eq!(found, expected, "overlap, flat {}: {label}", bvh.is_flat());
            }
        }
    }
    assert!(visits > 500, "the rays pass items: {visits}");
}

#[test]
fn wide_nodes_use_their_four_children_and_every_item_once() {
    for items in [1_u32, 2, 3, 4, 5, 17, 64, 200, 1000] {
        let bounds = boxes(items as usize, 0.0);
        let mut bvh = TemporalBvh::shaped(false);
        bvh.build(3, 0..items, |i| bounds[i as usize].center());
        let mut count = vec![0; items as usize];
        let mut full = 0;
        let spares = &bvh.children[bvh.linked..];
        assert_eq!(spares.len(), spare_nodes(bvh.linked), "{items} items");
        assert!(spares.iter().all(|links| *links == [NO_CHILD; 4]));
        assert_eq!(bvh.parent_lane.len(), bvh.linked);
        for (node, links) in bvh.children[..bvh.linked].iter().enumerate() {
            let used = links.iter().filter(|&&l| l != NO_CHILD).count();
            assert!(used >= 1, "{items} items: node {node} is empty");
            full += usize::from(used == 4);
            for (lane, &link) in links.iter().enumerate() {
                if link != NO_CHILD && link & ITEM != 0 {
                    count[(link & !ITEM) as usize] += 1;
                    assert_eq!(
                        bvh.leaf_of[(link & !ITEM) as usize],
                        node as u32 * 24 + lane as u32
                    );
                } else if link != NO_CHILD {
                    assert!(link as usize > node, "children come after their parents");
                    assert_eq!(
                        bvh.parent_lane[link as usize],
                        ((node as u32) << 2) | lane as u32
                    );
                }
            }
        }
        assert!(count.iter().all(|&c| c == 1), "{items} items: {count:?}");
        // Splits in fours keep nodes nearly full: about a third as many nodes as items
        // (the collapse of plain median splits made 85 nodes for 200 items).
        let bound = (items as usize).div_ceil(3) + items as usize / 12 + 1;
        assert!(bvh.linked <= bound, "{items} items: {} nodes", bvh.linked);
        // A power of four items fills every node (median splits halve them exactly).
        if items.is_power_of_two() && items.trailing_zeros() % 2 == 0 && items > 1 {
            assert_eq!(full, bvh.linked, "{items} items");
            assert_eq!(full as u32, (items - 1) / 3, "{items} items");
        }
    }
}

#[test]
fn static_overlap_finds_moved_boxes_after_a_rebuild() {
    let mut bounds = boxes(40, 0.0);
    let mut bvh = Bvh::default();
    bvh.build(0..40, &bounds);
    bounds[7] = Aabb::around_sphere(Vec3::new(500.0, 500.0, 500.0), 1.0);
    bvh.build(0..40, &bounds);
    let mut found = Vec::new();
    let query = Aabb::around_sphere(Vec3::splat(500.0), 2.0);
    bvh.overlap(&query, |i| {
        if bounds[i as usize].intersects(&query) {
            found.push(i);
        }
    });
    assert_eq!(found, vec![7]);
}
