//! A bounding volume hierarchy over item boxes: the broadphase of every query.
//!
//! What lives here: building (median split on the longest centroid axis), refitting after
//! the item boxes change, and the traversals (ray, fat ray for sweeps, box). The entity
//! broadphase builds it over each entity's bounds across the whole history window and
//! refits it after every recorded frame; static geometry builds it once. Items are `u32`
//! indices into the caller's own arrays.
//!
//! Why hand-written rather than parry3d's `Bvh`: the leaves here are whole entities whose
//! boxes change every tick and are refitted in place with no allocation, and the traversal
//! lets the caller shrink the ray as it finds closer hits.

use glam::Vec3;

use crate::math::Aabb;

/// Items per leaf: a few entities per leaf keeps the tree shallow without testing many
/// boxes that a split would have culled.
const LEAF_SIZE: usize = 4;

/// Deepest possible tree: median splits halve the items, and item counts are `u32`.
const MAX_DEPTH: usize = 64;

/// A node: its box, and either its children (`count == 0`: children at `first` and
/// `first + 1`) or its items (`items[first..first + count]`).
#[derive(Debug, Clone, Copy)]
#[repr(C)]
struct Node {
    min: [f32; 3],
    count: u32,
    max: [f32; 3],
    first: u32,
}

// PERF: two nodes per 64-byte cache line; the traversal loads a node's box and links in one
// line.
const _: () = assert!(std::mem::size_of::<Node>() == 32);

impl Node {
    #[inline]
    fn aabb(&self) -> Aabb {
        Aabb::new(Vec3::from_array(self.min), Vec3::from_array(self.max))
    }

    #[inline]
    fn set_aabb(&mut self, aabb: Aabb) {
        self.min = aabb.min.to_array();
        self.max = aabb.max.to_array();
    }
}

/// The hierarchy. Empty until [`Bvh::build`] is called.
#[derive(Debug, Clone, Default)]
pub(crate) struct Bvh {
    nodes: Vec<Node>,
    items: Vec<u32>,
    /// Build work list, kept to reuse its allocation.
    pending: Vec<(u32, u32, u32)>,
}

impl Bvh {
    /// Rebuilds the tree over `items`, whose boxes are `bounds[item]`. Reuses the previous
    /// tree's memory, so rebuilding at a steady size allocates nothing.
    pub(crate) fn build(&mut self, items: impl IntoIterator<Item = u32>, bounds: &[Aabb]) {
        self.items.clear();
        self.items.extend(items);
        self.nodes.clear();
        if self.items.is_empty() {
            return;
        }
        let centroid = |item: u32| {
            let b = &bounds[item as usize];
            // An empty box (nothing recorded yet) has no centre; put it at the origin.
            if b.is_empty() { Vec3::ZERO } else { b.center() }
        };
        self.nodes.push(Node {
            min: [0.0; 3],
            count: 0,
            max: [0.0; 3],
            first: 0,
        });
        self.pending.clear();
        self.pending.push((0, 0, self.items.len() as u32));
        while let Some((node, start, end)) = self.pending.pop() {
            let slice = &mut self.items[start as usize..end as usize];
            if slice.len() <= LEAF_SIZE {
                self.nodes[node as usize].first = start;
                self.nodes[node as usize].count = end - start;
                continue;
            }
            let mut lo = Vec3::INFINITY;
            let mut hi = Vec3::NEG_INFINITY;
            for &item in slice.iter() {
                let c = centroid(item);
                lo = lo.min(c);
                hi = hi.max(c);
            }
            let extent = hi - lo;
            let axis = if extent.x >= extent.y && extent.x >= extent.z {
                0
            } else if extent.y >= extent.z {
                1
            } else {
                2
            };
            let mid = slice.len() / 2;
            slice.select_nth_unstable_by(mid, |a, b| {
                centroid(*a)[axis].total_cmp(&centroid(*b)[axis])
            });
            let left = self.nodes.len() as u32;
            let blank = Node {
                min: [0.0; 3],
                count: 0,
                max: [0.0; 3],
                first: 0,
            };
            self.nodes.push(blank);
            self.nodes.push(blank);
            self.nodes[node as usize].first = left;
            self.nodes[node as usize].count = 0;
            let split = start + mid as u32;
            self.pending.push((left, start, split));
            self.pending.push((left + 1, split, end));
        }
        self.refit(bounds);
    }

    /// Recomputes every node's box from the items' current boxes, keeping the topology.
    pub(crate) fn refit(&mut self, bounds: &[Aabb]) {
        // Children are always pushed after their parent, so walking backwards visits every
        // child before its parent.
        for i in (0..self.nodes.len()).rev() {
            let node = self.nodes[i];
            let aabb = if node.count > 0 {
                let range = node.first as usize..(node.first + node.count) as usize;
                self.items[range]
                    .iter()
                    .fold(Aabb::EMPTY, |acc, &item| acc.union(&bounds[item as usize]))
            } else {
                let first = node.first as usize;
                self.nodes[first]
                    .aabb()
                    .union(&self.nodes[first + 1].aabb())
            };
            self.nodes[i].set_aabb(aabb);
        }
    }

    /// Visits the items of every leaf whose box the ray `origin + t * dir`, `t` in
    /// `[0, t_max]`, passes within `margin` of, nearest leaves first: a superset of the
    /// items whose own boxes it passes, which the visitor tests itself (it needs the
    /// per-item decision anyway). The visitor returns the new `t_max` (return
    /// the argument to keep it): a closest-hit query shrinks it as it finds hits, which
    /// prunes everything behind them.
    pub(crate) fn cast(
        &self,
        origin: Vec3,
        dir: Vec3,
        margin: f32,
        mut t_max: f32,
        mut visit: impl FnMut(u32, f32) -> f32,
    ) {
        if self.nodes.is_empty() {
            return;
        }
        let inv_dir = crate::math::ray_recip(dir);
        let mut stack = [0_u32; MAX_DEPTH];
        let mut depth = 0;
        let root = self.nodes[0].aabb().inflated(margin);
        if root.ray_interval(origin, inv_dir, t_max).is_none() {
            return;
        }
        stack[0] = 0;
        depth += 1;
        while depth > 0 {
            depth -= 1;
            let node = self.nodes[stack[depth] as usize];
            if node.count > 0 {
                for &item in &self.items[node.first as usize..(node.first + node.count) as usize] {
                    t_max = visit(item, t_max);
                }
                continue;
            }
            let first = node.first as usize;
            let near_of = |i: usize| {
                self.nodes[i]
                    .aabb()
                    .inflated(margin)
                    .ray_interval(origin, inv_dir, t_max)
                    .map(|(near, _)| near)
            };
            match (near_of(first), near_of(first + 1)) {
                (Some(a), Some(b)) => {
                    // Push the farther child first so the nearer one is visited first.
                    let (near, far) = if a <= b {
                        (first, first + 1)
                    } else {
                        (first + 1, first)
                    };
                    stack[depth] = far as u32;
                    stack[depth + 1] = near as u32;
                    depth += 2;
                }
                (Some(_), None) => {
                    stack[depth] = first as u32;
                    depth += 1;
                }
                (None, Some(_)) => {
                    stack[depth] = first as u32 + 1;
                    depth += 1;
                }
                (None, None) => {}
            }
        }
    }

    /// Visits the items of every leaf whose box intersects `query` (a superset of the items
    /// whose own boxes do).
    pub(crate) fn overlap(&self, query: &Aabb, mut visit: impl FnMut(u32)) {
        if self.nodes.is_empty() {
            return;
        }
        let mut stack = [0_u32; MAX_DEPTH];
        let mut depth = 1;
        while depth > 0 {
            depth -= 1;
            let node = self.nodes[stack[depth] as usize];
            if !node.aabb().intersects(query) {
                continue;
            }
            if node.count > 0 {
                for &item in &self.items[node.first as usize..(node.first + node.count) as usize] {
                    visit(item);
                }
            } else {
                stack[depth] = node.first;
                stack[depth + 1] = node.first + 1;
                depth += 2;
            }
        }
    }

    /// Heap bytes held by the tree.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.items.capacity() * 4
            + self.pending.capacity() * std::mem::size_of::<(u32, u32, u32)>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boxes(n: usize) -> Vec<Aabb> {
        (0..n)
            .map(|i| {
                let c = Vec3::new((i % 17) as f32 * 3.0, (i / 17) as f32 * 3.0, (i % 5) as f32);
                Aabb::around_sphere(c, 0.5)
            })
            .collect()
    }

    #[test]
    fn cast_finds_exactly_the_boxes_a_linear_scan_finds() {
        let bounds = boxes(300);
        let mut bvh = Bvh::default();
        bvh.build(0..300, &bounds);
        for k in 0..50 {
            let origin = Vec3::new(-5.0, k as f32 * 1.3 - 3.0, 2.0);
            let dir = Vec3::new(1.0, 0.05 * k as f32, -0.02).normalize();
            let inv = crate::math::ray_recip(dir);
            let mut found = Vec::new();
            bvh.cast(origin, dir, 0.0, 100.0, |item, t| {
                if bounds[item as usize]
                    .ray_interval(origin, inv, 100.0)
                    .is_some()
                {
                    found.push(item);
                }
                t
            });
            found.sort_unstable();
            let expected: Vec<u32> = (0..300)
                .filter(|&i| {
                    bounds[i as usize]
                        .ray_interval(origin, inv, 100.0)
                        .is_some()
                })
                .collect();
            assert_eq!(found, expected, "ray {k}");
        }
    }

    #[test]
    fn refit_follows_moved_boxes() {
        let mut bounds = boxes(40);
        let mut bvh = Bvh::default();
        bvh.build(0..40, &bounds);
        bounds[7] = Aabb::around_sphere(Vec3::new(500.0, 500.0, 500.0), 1.0);
        bvh.refit(&bounds);
        let mut found = Vec::new();
        let query = Aabb::around_sphere(Vec3::splat(500.0), 2.0);
        bvh.overlap(&query, |i| {
            if bounds[i as usize].intersects(&query) {
                found.push(i);
            }
        });
        assert_eq!(found, vec![7]);
    }
}
