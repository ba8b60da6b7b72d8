//! The examples' proving key: read from a `.params` file when one is named
//! and exists, otherwise generated for the shape (and saved there when a
//! file is named), so repeated runs skip the minutes of generation.

use std::path::Path;

use groth16_gpu::params::CheckMode;
use groth16_gpu::synthesis::CircuitShape;
use groth16_gpu::{generate_parameters_for_shape_random, ProvingKey};
use rand_core::OsRng;

pub fn load_or_generate(
    path: Option<&Path>,
    shape: &CircuitShape,
) -> Result<ProvingKey, Box<dyn std::error::Error>> {
    if let Some(path) = path.filter(|p| p.exists()) {
        println!("loading parameters from {}", path.display());
        return Ok(ProvingKey::read_file(path, CheckMode::OnCurve)?);
    }
    println!(
        "generating parameters for {} constraints (minutes at 2^20 and up)",
        shape.num_constraints()
    );
    let key = generate_parameters_for_shape_random(shape, &mut OsRng)?;
    if let Some(path) = path {
        key.write_file(path)?;
        println!("saved parameters to {}", path.display());
    }
    Ok(key)
}
