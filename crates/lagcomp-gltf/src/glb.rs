//! The glTF 2.0 binary container, written by hand: it is small (a JSON chunk and a BIN
//! chunk, each padded to 4 bytes) and the scenes need nothing beyond triangles, normals
//! and plain materials.
//!
//! Layout: one buffer (the BIN chunk); per mesh, a buffer view and accessor each for
//! positions (with the min/max glTF requires), normals and indices (16-bit when the mesh
//! has few enough vertices). JSON objects are `serde_json` maps, whose keys are sorted,
//! so the same scene gives the same bytes.

use lagcomp::Vec3;
use serde_json::{Value, json};

use crate::error::SceneError;
use crate::mesh::Mesh;
use crate::scene::{MarkerKind, RAY_THICKNESS, VerdictScene};

/// "glTF", little-endian.
const MAGIC: u32 = 0x4654_6C67;
const VERSION: u32 = 2;
const CHUNK_JSON: u32 = 0x4E4F_534A;
const CHUNK_BIN: u32 = 0x004E_4942;

// glTF's numeric codes.
const ARRAY_BUFFER: u32 = 34962;
const ELEMENT_ARRAY_BUFFER: u32 = 34963;
const FLOAT: u32 = 5126;
const UNSIGNED_SHORT: u32 = 5123;
const UNSIGNED_INT: u32 = 5125;
const TRIANGLES: u32 = 4;

/// Radius of the small spheres marking points, metres.
const MARKER_RADIUS: f32 = 0.03;

/// The materials, one per kind of object: (name, linear RGBA base colour). Alpha below 1
/// is drawn blended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Paint {
    Present,
    Rewound,
    Shot,
    SweepRadius,
    Wall,
    HitPoint,
    ClaimedPoint,
}

impl Paint {
    const ALL: [Self; 7] = [
        Self::Present,
        Self::Rewound,
        Self::Shot,
        Self::SweepRadius,
        Self::Wall,
        Self::HitPoint,
        Self::ClaimedPoint,
    ];

    fn name(self) -> &'static str {
        match self {
            Self::Present => "present hitbox",
            Self::Rewound => "rewound hitbox",
            Self::Shot => "shot",
            Self::SweepRadius => "sweep radius",
            Self::Wall => "wall",
            Self::HitPoint => "hit point",
            Self::ClaimedPoint => "claimed point",
        }
    }

    /// Linear RGBA (glTF's base colour factor is linear).
    fn colour(self) -> [f32; 4] {
        match self {
            Self::Present => [0.02, 0.25, 1.0, 0.45],
            Self::Rewound => [1.0, 0.3, 0.0, 0.55],
            Self::Shot => [1.0, 0.85, 0.0, 1.0],
            Self::SweepRadius => [1.0, 0.85, 0.0, 0.25],
            Self::Wall => [0.35, 0.35, 0.35, 0.35],
            Self::HitPoint => [0.0, 0.8, 0.1, 1.0],
            Self::ClaimedPoint => [0.9, 0.0, 0.8, 1.0],
        }
    }

    fn material(self) -> Value {
        let [r, g, b, a] = self.colour();
        let mut material = json!({
            "name": self.name(),
            "pbrMetallicRoughness": {
                "baseColorFactor": [r, g, b, a],
                "metallicFactor": 0.0,
                "roughnessFactor": 0.8,
            },
        });
        if a < 1.0 {
            // Translucent shapes are seen from inside too (a hitbox around the muzzle).
            material["alphaMode"] = json!("BLEND");
            material["doubleSided"] = json!(true);
        }
        material
    }
}

/// An object to draw: its node's name and extras, its mesh, its paint.
struct Part {
    name: String,
    extras: Option<Value>,
    mesh: Mesh,
    paint: Paint,
}

pub(crate) fn write(scene: &VerdictScene) -> Result<Vec<u8>, SceneError> {
    let parts = parts(scene);
    let mut doc = Document::default();
    let mut materials: Vec<Paint> = Vec::new();
    let mut nodes = Vec::with_capacity(parts.len());
    let mut meshes = Vec::with_capacity(parts.len());
    // Materials in a fixed order, only those used (the validator flags unused ones).
    for paint in Paint::ALL {
        if parts.iter().any(|p| p.paint == paint) {
            materials.push(paint);
        }
    }
    for (index, part) in parts.iter().enumerate() {
        let material = materials
            .iter()
            .position(|&m| m == part.paint)
            .expect("every part's paint was listed");
        let attributes = json!({
            "POSITION": doc.positions(&part.mesh.positions)?,
            "NORMAL": doc.normals(&part.mesh.normals)?,
        });
        let indices = doc.indices(&part.mesh.indices, part.mesh.positions.len())?;
        meshes.push(json!({
            "name": part.name,
            "primitives": [{
                "attributes": attributes,
                "indices": indices,
                "material": material,
                "mode": TRIANGLES,
            }],
        }));
        let mut node = json!({ "name": part.name, "mesh": index });
        if let Some(extras) = &part.extras {
            node["extras"] = extras.clone();
        }
        nodes.push(node);
    }

    let mut root = json!({
        "asset": {
            "version": "2.0",
            "generator": concat!("lagcomp-gltf ", env!("CARGO_PKG_VERSION")),
        },
        "scene": 0,
        "scenes": [{
            "name": scene.name,
            "nodes": (0..nodes.len()).collect::<Vec<_>>(),
            "extras": Value::Object(scene.extras.clone()),
        }],
        "nodes": nodes,
        "meshes": meshes,
        "materials": materials.iter().map(|m| m.material()).collect::<Vec<_>>(),
    });
    if !doc.bin.is_empty() {
        root["buffers"] = json!([{ "byteLength": doc.bin.len() }]);
        root["bufferViews"] = Value::Array(doc.views);
        root["accessors"] = Value::Array(doc.accessors);
    }
    let json = serde_json::to_vec(&root).expect("JSON values always serialize");
    container(json, doc.bin)
}

/// Everything the scene draws, in a fixed order.
fn parts(scene: &VerdictScene) -> Vec<Part> {
    let mut parts = Vec::new();
    for (label, hitboxes, paint) in [
        ("present", &scene.present, Paint::Present),
        ("rewound", &scene.rewound, Paint::Rewound),
    ] {
        for h in hitboxes {
            parts.push(Part {
                name: format!("{label}: {}", h.name),
                extras: Some(json!({ "lagcomp": label, "hitbox": h.name })),
                mesh: Mesh::of_placed(&h.placed),
                paint,
            });
        }
    }
    let shot = &scene.shot;
    let direction = shot.direction.normalize();
    parts.push(Part {
        name: "shot".into(),
        extras: Some(json!({ "lagcomp": "shot", "length": shot.length, "radius": shot.radius })),
        mesh: Mesh::segment(shot.origin, direction, shot.length, RAY_THICKNESS),
        paint: Paint::Shot,
    });
    if shot.radius > RAY_THICKNESS {
        parts.push(Part {
            name: "shot: sweep radius".into(),
            extras: None,
            mesh: Mesh::segment(shot.origin, direction, shot.length, shot.radius),
            paint: Paint::SweepRadius,
        });
    }
    for w in &scene.walls {
        parts.push(Part {
            name: format!("wall {}", w.id.0),
            extras: Some(json!({ "lagcomp": "wall", "id": w.id.0, "distance": w.distance })),
            mesh: Mesh::of_placed(&w.placed),
            paint: Paint::Wall,
        });
    }
    for m in &scene.markers {
        parts.push(Part {
            name: m.name.clone(),
            extras: None,
            mesh: Mesh::segment(m.point, Vec3::Y, 0.0, MARKER_RADIUS),
            paint: match m.kind {
                MarkerKind::Hit => Paint::HitPoint,
                MarkerKind::Claimed => Paint::ClaimedPoint,
            },
        });
    }
    parts
}

/// The BIN chunk as it fills, and the views and accessors into it.
#[derive(Default)]
struct Document {
    bin: Vec<u8>,
    views: Vec<Value>,
    accessors: Vec<Value>,
}

impl Document {
    /// Appends `bytes` as a buffer view (4-byte aligned, as every accessor here needs).
    fn view(&mut self, bytes: &[u8], target: u32) -> Result<usize, SceneError> {
        pad(&mut self.bin, 0);
        let offset = self.bin.len();
        self.bin.extend_from_slice(bytes);
        if self.bin.len() > u32::MAX as usize - 64 {
            return Err(SceneError::TooLarge);
        }
        self.views.push(json!({
            "buffer": 0,
            "byteOffset": offset,
            "byteLength": bytes.len(),
            "target": target,
        }));
        Ok(self.views.len() - 1)
    }

    fn accessor(&mut self, accessor: Value) -> usize {
        self.accessors.push(accessor);
        self.accessors.len() - 1
    }

    fn vec3s(&mut self, values: &[Vec3]) -> Result<usize, SceneError> {
        let bytes: Vec<u8> = values
            .iter()
            .flat_map(|v| v.to_array())
            .flat_map(f32::to_le_bytes)
            .collect();
        self.view(&bytes, ARRAY_BUFFER)
    }

    fn positions(&mut self, positions: &[Vec3]) -> Result<usize, SceneError> {
        let view = self.vec3s(positions)?;
        let min = positions.iter().fold(Vec3::INFINITY, |a, &b| a.min(b));
        let max = positions.iter().fold(Vec3::NEG_INFINITY, |a, &b| a.max(b));
        // Widened exactly: the written decimal reads back as this very float, so the
        // validator finds min and max equal to the data's.
        let wide = |v: Vec3| v.to_array().map(f64::from);
        Ok(self.accessor(json!({
            "bufferView": view,
            "componentType": FLOAT,
            "count": positions.len(),
            "type": "VEC3",
            "min": wide(min),
            "max": wide(max),
        })))
    }

    fn normals(&mut self, normals: &[Vec3]) -> Result<usize, SceneError> {
        let view = self.vec3s(normals)?;
        Ok(self.accessor(json!({
            "bufferView": view,
            "componentType": FLOAT,
            "count": normals.len(),
            "type": "VEC3",
        })))
    }

    fn indices(&mut self, indices: &[u32], vertices: usize) -> Result<usize, SceneError> {
        let (bytes, component): (Vec<u8>, u32) = if vertices <= usize::from(u16::MAX) {
            let bytes = indices
                .iter()
                .flat_map(|&i| (i as u16).to_le_bytes())
                .collect();
            (bytes, UNSIGNED_SHORT)
        } else {
            let bytes = indices.iter().flat_map(|&i| i.to_le_bytes()).collect();
            (bytes, UNSIGNED_INT)
        };
        let view = self.view(&bytes, ELEMENT_ARRAY_BUFFER)?;
        Ok(self.accessor(json!({
            "bufferView": view,
            "componentType": component,
            "count": indices.len(),
            "type": "SCALAR",
        })))
    }
}

/// The 12-byte header, the JSON chunk (padded with spaces) and the BIN chunk (padded
/// with zeros).
fn container(mut json: Vec<u8>, mut bin: Vec<u8>) -> Result<Vec<u8>, SceneError> {
    pad(&mut json, b' ');
    pad(&mut bin, 0);
    let bin_chunk = if bin.is_empty() { 0 } else { 8 + bin.len() };
    let total = 12 + 8 + json.len() + bin_chunk;
    let total = u32::try_from(total).map_err(|_| SceneError::TooLarge)?;
    let mut out = Vec::with_capacity(total as usize);
    for word in [MAGIC, VERSION, total, json.len() as u32, CHUNK_JSON] {
        out.extend_from_slice(&word.to_le_bytes());
    }
    out.extend_from_slice(&json);
    if !bin.is_empty() {
        out.extend_from_slice(&(bin.len() as u32).to_le_bytes());
        out.extend_from_slice(&CHUNK_BIN.to_le_bytes());
        out.extend_from_slice(&bin);
    }
    Ok(out)
}

/// Pads `bytes` with `with` to a multiple of 4 bytes, glTF's alignment for chunks and
/// for the accessors here.
fn pad(bytes: &mut Vec<u8>, with: u8) {
    while !bytes.len().is_multiple_of(4) {
        bytes.push(with);
    }
}
