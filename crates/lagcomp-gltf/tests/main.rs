//! lagcomp-gltf's integration tests, one binary: the scenes of a recording's verdicts,
//! the Khronos glTF validator on every .glb written here, and one scene rendered by
//! three.js in headless Chromium.

mod browser;
mod khronos;
mod scenes;
mod support;
