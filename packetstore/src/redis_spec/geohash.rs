//! Geohash scores, as Redis 7.0 computes them (`geohash.c`,
//! `geohash_helper.c`, and the parts of `geo.c` that turn them into score
//! ranges and GEOHASH strings), so that a GEO sorted set holds the same
//! scores here as in Redis and a search finds the same members.
//!
//! A position is a 52-bit score: longitude in [-180, 180] and latitude in
//! [-85.05112878, 85.05112878] (the Web Mercator limits) each cut into 2^26
//! cells, their cell numbers interleaved (latitude in the even bits,
//! longitude in the odd). A search covers its shape with the cell around
//! the centre, at a step (bits per coordinate) estimated from its size, and
//! that cell's 8 neighbours, less those the shape cannot reach; each cell
//! is one half-open range of scores.
//!
//! Owns: encoding, decoding, distances, the cells a search scans and the
//! test of a point against a search shape.
//!
//! Invariant: every computation is the C one, operation for operation, so
//! results are Redis's to the last bit (x86-64, where C does not fuse
//! multiply-adds); a step is always in `1..=STEP_MAX`.

use std::f64::consts::PI;

/// Bits per coordinate in a stored score (26 * 2 = 52 bits).
pub const STEP_MAX: u8 = 26;

const LAT_MIN: f64 = -85.05112878;
const LAT_MAX: f64 = 85.05112878;
const LON_MIN: f64 = -180.0;
const LON_MAX: f64 = 180.0;
/// Bits in a stored score.
const SCORE_BITS: u32 = 52;
/// Earth's quadratic mean radius for WGS-84.
const EARTH_RADIUS_M: f64 = 6372797.560856;
/// Half the Web Mercator world's width, in metres.
const MERCATOR_MAX_M: f64 = 20037726.37;
/// Radians per degree, as C's `M_PI / 180.0`.
const RAD_PER_DEG: f64 = PI / 180.0;
/// GEOHASH's base-32 alphabet.
const GEO_ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";

/// A cell: `step` bits per coordinate, interleaved into `bits`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cell {
    bits: u64,
    step: u8,
}

#[derive(Clone, Copy, Debug)]
struct Range {
    min: f64,
    max: f64,
}

/// A cell's extent in degrees.
#[derive(Clone, Copy, Debug)]
struct Area {
    lon: Range,
    lat: Range,
}

const WGS84_LON: Range = Range { min: LON_MIN, max: LON_MAX };
const WGS84_LAT: Range = Range { min: LAT_MIN, max: LAT_MAX };
/// GEOHASH's standard latitude range.
const STANDARD_LAT: Range = Range { min: -90.0, max: 90.0 };

/// Redis's 52-bit score of a position; None when lon/lat are outside the
/// valid range (GEOADD's error case: lon in [-180, 180], lat in
/// [-85.05112878, 85.05112878]), NaN included.
pub fn encode(lon: f64, lat: f64) -> Option<u64> {
    encode_cell(WGS84_LON, WGS84_LAT, lon, lat, STEP_MAX).map(align_52)
}

/// The position a 52-bit score decodes to (the cell's centre, clamped as
/// Redis clamps): (lon, lat).
pub fn decode(score: u64) -> (f64, f64) {
    let area = decode_area(WGS84_LON, WGS84_LAT, Cell { bits: score, step: STEP_MAX });
    let lon = ((area.lon.min + area.lon.max) / 2.0).clamp(LON_MIN, LON_MAX);
    let lat = ((area.lat.min + area.lat.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (lon, lat)
}

/// Great-circle distance in metres (haversine; `geohashGetDistance`,
/// exact along a meridian).
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let lon1_rad = deg_rad(lon1);
    let lon2_rad = deg_rad(lon2);
    let v = ((lon2_rad - lon1_rad) / 2.0).sin();
    // Redis's fast path: longitudes (practically) equal.
    if v == 0.0 {
        return lat_distance_m(lat1, lat2);
    }
    let lat1_rad = deg_rad(lat1);
    let lat2_rad = deg_rad(lat2);
    let u = ((lat2_rad - lat1_rad) / 2.0).sin();
    let a = u * u + lat1_rad.cos() * lat2_rad.cos() * v * v;
    2.0 * EARTH_RADIUS_M * a.sqrt().asin()
}

/// GEOHASH's 11-character string for a stored score: the decoded position
/// re-encoded with the standard latitude range [-90, 90] at step 26, in
/// 5-bit groups; the 11th character is always '0' (`geohashCommand`).
pub fn hash_string(score: u64) -> String {
    let (lon, lat) = decode(score);
    // A decoded position is always in range, so this never falls back.
    let bits = encode_cell(WGS84_LON, STANDARD_LAT, lon, lat, STEP_MAX).map_or(0, |cell| cell.bits);
    (0..11u32)
        .map(|i| {
            let idx = if i == 10 { 0 } else { (bits >> (SCORE_BITS - (i + 1) * 5)) & 0x1f };
            char::from(GEO_ALPHABET[idx as usize])
        })
        .collect()
}

/// The search shape, in metres (the caller converts units).
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    Radius(f64),
    Box { width: f64, height: f64 },
}

/// The score ranges to scan for a search around (lon, lat), in the order
/// `geo.c`'s `membersOfAllNeighbors` visits them: the centre cell and its
/// neighbours north, south, east, west, north-east, north-west, south-east
/// and south-west, less those pruned, and less a cell equal to the one
/// scanned just before it (never compared with the centre, as in Redis).
/// Each range is half-open, [min, max). Empty when the centre is outside
/// the valid range (Redis refuses such a centre before searching).
pub fn search_ranges(lon: f64, lat: f64, shape: Shape) -> Vec<(u64, u64)> {
    let Some(cells) = search_cells(lon, lat, shape) else {
        return Vec::new();
    };
    let mut ranges = Vec::with_capacity(cells.len());
    let mut last_scanned = 0;
    for (i, cell) in cells.iter().enumerate() {
        let Some(cell) = *cell else { continue };
        if last_scanned != 0 && cells[last_scanned] == Some(cell) {
            continue;
        }
        ranges.push(cell_scores(cell));
        last_scanned = i;
    }
    ranges
}

/// Whether the point at (plon, plat) is inside the shape centred at
/// (lon, lat), and its great-circle distance in metres from the centre if
/// so (`geohashGetDistanceIfInRadiusWGS84`,
/// `geohashGetDistanceIfInRectangle`).
pub fn within(shape: Shape, lon: f64, lat: f64, plon: f64, plat: f64) -> Option<f64> {
    match shape {
        Shape::Radius(radius_m) => {
            let distance_m = distance(lon, lat, plon, plat);
            if distance_m > radius_m {
                return None;
            }
            Some(distance_m)
        }
        Shape::Box { width: width_m, height: height_m } => {
            // The latitude test is the cheaper one, so it comes first.
            if lat_distance_m(plat, lat) > height_m / 2.0 {
                return None;
            }
            if distance(plon, plat, lon, plat) > width_m / 2.0 {
                return None;
            }
            Some(distance(lon, lat, plon, plat))
        }
    }
}

fn deg_rad(deg: f64) -> f64 {
    deg * RAD_PER_DEG
}

fn rad_deg(rad: f64) -> f64 {
    rad / RAD_PER_DEG
}

/// Distance along a meridian (`geohashGetLatDistance`).
fn lat_distance_m(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_M * (deg_rad(lat2) - deg_rad(lat1)).abs()
}

/// The low 32 bits of `x` in the even bit positions, of `y` in the odd.
fn interleave64(x_lo: u32, y_lo: u32) -> u64 {
    const B: [u64; 5] =
        [0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F, 0x00FF00FF00FF00FF, 0x0000FFFF0000FFFF];
    const S: [u32; 5] = [1, 2, 4, 8, 16];
    let mut x = u64::from(x_lo);
    let mut y = u64::from(y_lo);
    for (b, s) in B.iter().zip(S).rev() {
        x = (x | (x << s)) & b;
        y = (y | (y << s)) & b;
    }
    x | (y << 1)
}

/// The inverse of `interleave64`: even bits in the low half, odd bits in
/// the high half.
fn deinterleave64(interleaved: u64) -> u64 {
    const B: [u64; 6] = [
        0x5555555555555555,
        0x3333333333333333,
        0x0F0F0F0F0F0F0F0F,
        0x00FF00FF00FF00FF,
        0x0000FFFF0000FFFF,
        0x00000000FFFFFFFF,
    ];
    const S: [u32; 6] = [0, 1, 2, 4, 8, 16];
    let mut x = interleaved;
    let mut y = interleaved >> 1;
    for (b, s) in B.iter().zip(S) {
        x = (x | (x >> s)) & b;
        y = (y | (y >> s)) & b;
    }
    x | (y << 32)
}

/// `geohashEncode`: None outside the WGS84 limits or the given ranges.
fn encode_cell(lon_range: Range, lat_range: Range, lon: f64, lat: f64, step: u8) -> Option<Cell> {
    let valid = (LON_MIN..=LON_MAX).contains(&lon)
        && (LAT_MIN..=LAT_MAX).contains(&lat)
        && (lon_range.min..=lon_range.max).contains(&lon)
        && (lat_range.min..=lat_range.max).contains(&lat);
    if !valid || step == 0 || step > 32 {
        return None;
    }
    let cells = (1u64 << step) as f64;
    let lat_offset = (lat - lat_range.min) / (lat_range.max - lat_range.min) * cells;
    let lon_offset = (lon - lon_range.min) / (lon_range.max - lon_range.min) * cells;
    // C converts the offsets to uint32_t: truncation, as `as` does here.
    Some(Cell { bits: interleave64(lat_offset as u32, lon_offset as u32), step })
}

/// `geohashDecode`: the cell's extent.
fn decode_area(lon_range: Range, lat_range: Range, cell: Cell) -> Area {
    let separated = deinterleave64(cell.bits);
    let lat_cell = separated as u32;
    let lon_cell = (separated >> 32) as u32;
    let cells = (1u64 << cell.step) as f64;
    let edge = |range: Range, n: u32| range.min + (f64::from(n) / cells) * (range.max - range.min);
    Area {
        lon: Range { min: edge(lon_range, lon_cell), max: edge(lon_range, lon_cell.wrapping_add(1)) },
        lat: Range { min: edge(lat_range, lat_cell), max: edge(lat_range, lat_cell.wrapping_add(1)) },
    }
}

/// `geohash_move_x` / `geohash_move_y`: the cell `dx` east and `dy` north
/// (each -1, 0 or 1), wrapping around.
fn moved(cell: Cell, dx: i8, dy: i8) -> Cell {
    const LON_BITS: u64 = 0xaaaaaaaaaaaaaaaa;
    const LAT_BITS: u64 = 0x5555555555555555;
    let shift = 64 - u32::from(cell.step) * 2;
    let step_along = |bits: u64, d: i8, own: u64, other: u64| {
        let zz = other >> shift;
        let stepped = match d {
            0 => return bits,
            1.. => bits.wrapping_add(zz + 1),
            _ => (bits | zz).wrapping_sub(zz + 1),
        };
        stepped & (own >> shift)
    };
    let lon = step_along(cell.bits & LON_BITS, dx, LON_BITS, LAT_BITS);
    let lat = step_along(cell.bits & LAT_BITS, dy, LAT_BITS, LON_BITS);
    Cell { bits: lon | lat, step: cell.step }
}

/// Indexes into the 9 cells, in `membersOfAllNeighbors`'s order.
const CENTRE: usize = 0;
const NORTH: usize = 1;
const SOUTH: usize = 2;
const EAST: usize = 3;
const WEST: usize = 4;
const NORTH_EAST: usize = 5;
const NORTH_WEST: usize = 6;
const SOUTH_EAST: usize = 7;
const SOUTH_WEST: usize = 8;
/// Each cell's offset (east, north) from the centre.
const OFFSETS: [(i8, i8); 9] = [(0, 0), (0, 1), (0, -1), (1, 0), (-1, 0), (1, 1), (-1, 1), (1, -1), (-1, -1)];

/// The centre cell at `step` and its 8 neighbours, and the centre's extent.
fn cells_around(lon: f64, lat: f64, step: u8) -> Option<([Cell; 9], Area)> {
    let centre = encode_cell(WGS84_LON, WGS84_LAT, lon, lat, step)?;
    let cells = OFFSETS.map(|(dx, dy)| moved(centre, dx, dy));
    Some((cells, decode_area(WGS84_LON, WGS84_LAT, centre)))
}

/// Bounding box of the shape in degrees (`geohashBoundingBox`):
/// (min lon, min lat, max lon, max lat).
fn bounding_box(lon: f64, lat: f64, shape: Shape) -> (f64, f64, f64, f64) {
    let (half_width_m, half_height_m) = match shape {
        Shape::Radius(radius_m) => (radius_m, radius_m),
        Shape::Box { width, height } => (width / 2.0, height / 2.0),
    };
    let lat_delta = rad_deg(half_height_m / EARTH_RADIUS_M);
    let lon_delta_top = rad_deg(half_width_m / EARTH_RADIUS_M / deg_rad(lat + lat_delta).cos());
    let lon_delta_bottom = rad_deg(half_width_m / EARTH_RADIUS_M / deg_rad(lat - lat_delta).cos());
    // The box is widest at its edge nearest the equator.
    let lon_delta = if lat < 0.0 { lon_delta_bottom } else { lon_delta_top };
    (lon - lon_delta, lat - lat_delta, lon + lon_delta, lat + lat_delta)
}

/// `geohashEstimateStepsByRadius`. C loops forever on a negative radius
/// (Redis refuses one first); past 30 doublings the result is clamped to
/// 26 anyway, so the loop stops there and any radius gets an answer.
fn estimate_step(radius_m: f64, lat: f64) -> u8 {
    if radius_m == 0.0 {
        return STEP_MAX;
    }
    let mut range_m = radius_m;
    let mut step: i32 = 1;
    while range_m < MERCATOR_MAX_M && step < 31 {
        range_m *= 2.0;
        step += 1;
    }
    step -= 2;
    // Wider cells towards the poles.
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, i32::from(STEP_MAX)) as u8
}

/// The shape's radius for the step estimate: its circumradius for a box.
fn covering_radius_m(shape: Shape) -> f64 {
    match shape {
        Shape::Radius(radius_m) => radius_m,
        Shape::Box { width, height } => ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt(),
    }
}

/// `geohashCalculateAreasByShapeWGS84`: the 9 cells in scan order, None
/// for those pruned. None when the centre cannot be encoded.
fn search_cells(lon: f64, lat: f64, shape: Shape) -> Option<[Option<Cell>; 9]> {
    let (min_lon, min_lat, max_lon, max_lat) = bounding_box(lon, lat, shape);
    let mut step = estimate_step(covering_radius_m(shape), lat);
    let (mut cells, mut area) = cells_around(lon, lat, step)?;
    // A neighbour that does not reach the box's edge means the step is
    // too fine near a cell border: one step coarser.
    let edge = |i: usize| decode_area(WGS84_LON, WGS84_LAT, cells[i]);
    let decrease_step = edge(NORTH).lat.max < max_lat
        || edge(SOUTH).lat.min > min_lat
        || edge(EAST).lon.max < max_lon
        || edge(WEST).lon.min > min_lon;
    if step > 1 && decrease_step {
        step -= 1;
        (cells, area) = cells_around(lon, lat, step)?;
    }
    let mut kept = cells.map(Some);
    if step >= 2 {
        let mut prune = |cond: bool, sides: [usize; 3]| {
            if cond {
                sides.iter().for_each(|&i| kept[i] = None);
            }
        };
        prune(area.lat.min < min_lat, [SOUTH, SOUTH_WEST, SOUTH_EAST]);
        prune(area.lat.max > max_lat, [NORTH, NORTH_EAST, NORTH_WEST]);
        prune(area.lon.min < min_lon, [WEST, SOUTH_WEST, NORTH_WEST]);
        prune(area.lon.max > max_lon, [EAST, SOUTH_EAST, NORTH_EAST]);
    }
    debug_assert!(kept[CENTRE].is_some());
    Some(kept)
}

/// A cell's bits aligned to a 52-bit score (`geohashAlign52Bits`).
fn align_52(cell: Cell) -> u64 {
    cell.bits << (SCORE_BITS - u32::from(cell.step) * 2)
}

/// The scores in a cell, [min, max) (`scoresOfGeoHashBox`).
fn cell_scores(cell: Cell) -> (u64, u64) {
    let next = Cell { bits: cell.bits + 1, step: cell.step };
    (align_52(cell), align_52(next))
}

#[cfg(test)]
mod tests {
    //! Expected values are those printed by Redis 7.0.15's `geohash.c` and
    //! `geohash_helper.c`, compiled with gcc 12 on x86-64 (-O0 and -O2
    //! agree), driven the way `geo.c` drives them.

    use super::*;

    const PALERMO: (f64, f64) = (13.361389, 38.115556);
    const CATANIA: (f64, f64) = (15.087269, 37.502669);
    const PALERMO_SCORE: u64 = 3479099956230698;
    const CATANIA_SCORE: u64 = 3479447370796909;

    fn same(actual: f64, expected: f64) {
        assert_eq!(actual.to_bits(), expected.to_bits(), "{actual:?} is not {expected:?}");
    }

    #[test]
    fn encode_matches_redis() {
        assert_eq!(encode(PALERMO.0, PALERMO.1), Some(PALERMO_SCORE));
        assert_eq!(encode(CATANIA.0, CATANIA.1), Some(CATANIA_SCORE));
        assert_eq!(encode(0.0, 0.0), Some(3377699720527872));
        assert_eq!(encode(-180.0, -85.05112878), Some(0));
        // The top corner's cell numbers are 2^26: beyond 52 bits, as in C.
        assert_eq!(encode(180.0, 85.05112878), Some(13510798882111488));
        assert_eq!(encode(-122.27652, 37.805186), Some(1367952638197536));
    }

    #[test]
    fn encode_refuses_out_of_range() {
        assert_eq!(encode(180.0001, 0.0), None);
        assert_eq!(encode(-180.0001, 0.0), None);
        assert_eq!(encode(0.0, 85.06), None);
        assert_eq!(encode(0.0, -85.06), None);
        assert_eq!(encode(f64::NAN, 0.0), None);
        assert_eq!(encode(0.0, f64::NAN), None);
    }

    #[test]
    fn decode_matches_redis() {
        let cases: [(u64, f64, f64); 5] = [
            (PALERMO_SCORE, 13.361389338970184, 38.1155563954963),
            (CATANIA_SCORE, 15.087267458438873, 37.50266842333162),
            (0, -179.99999731779099, -85.05112751263943),
            ((1 << 52) - 1, 179.99999731779099, 85.05112751263943),
            // Past 52 bits: clamped to the latitude limit.
            (1 << 52, -179.99999731779099, 85.05112878),
        ];
        for (score, lon, lat) in cases {
            let (actual_lon, actual_lat) = decode(score);
            same(actual_lon, lon);
            same(actual_lat, lat);
        }
    }

    #[test]
    fn distance_matches_redis() {
        same(distance(PALERMO.0, PALERMO.1, CATANIA.0, CATANIA.1), 166274.25779140723);
        // GEODIST Sicily Palermo Catania: between the decoded positions.
        let (p, c) = (decode(PALERMO_SCORE), decode(CATANIA_SCORE));
        same(distance(p.0, p.1, c.0, c.1), 166274.15156960033);
        // Equal longitudes: the meridian fast path.
        same(distance(PALERMO.0, PALERMO.1, PALERMO.0, 40.0), 209599.73367720167);
        same(distance(0.0, 0.0, 180.0, 0.0), 20020734.00000016);
        same(distance(-122.27652, 37.805186, 151.2093, -33.8688), 11963611.675822202);
    }

    #[test]
    fn hash_string_matches_redis() {
        assert_eq!(hash_string(PALERMO_SCORE), "sqc8b49rny0");
        assert_eq!(hash_string(CATANIA_SCORE), "sqdtr74hyu0");
        assert_eq!(hash_string(0), "00bh0hbj200");
        assert_eq!(hash_string((1 << 52) - 1), "zzpgzgpfxz0");
    }

    #[test]
    fn interleave_round_trips() {
        assert_eq!(interleave64(0b11, 0), 0b0101);
        assert_eq!(interleave64(0, 0b11), 0b1010);
        let (x, y) = (0xdead_beef_u32, 0x1234_5678_u32);
        assert_eq!(deinterleave64(interleave64(x, y)), u64::from(x) | (u64::from(y) << 32));
    }

    const SICILY_RANGES: [(u64, u64); 4] = [
        (3475556255399936, 3476655767027712),
        (3478854790283264, 3479954301911040),
        (3477755278655488, 3478854790283264),
        (3481053813538816, 3482153325166592),
    ];

    #[test]
    fn search_ranges_radius_200_km() {
        assert_eq!(search_ranges(15.0, 37.0, Shape::Radius(200_000.0)), SICILY_RANGES);
    }

    #[test]
    fn search_ranges_box_400_km() {
        let shape = Shape::Box { width: 400_000.0, height: 400_000.0 };
        assert_eq!(search_ranges(15.0, 37.0, shape), SICILY_RANGES);
    }

    #[test]
    fn search_ranges_small_and_zero() {
        // Radius 0: step 26, the centre's own cell only.
        assert_eq!(search_ranges(15.0, 37.0, Shape::Radius(0.0)), [(3476504601741708, 3476504601741709)]);
        assert_eq!(
            search_ranges(15.0, 37.0, Shape::Radius(1.0)),
            [
                (3476504601741696, 3476504601741712),
                (3476504601741712, 3476504601741728),
                (3476504601741520, 3476504601741536),
                (3476504601741728, 3476504601741744),
                (3476504601741744, 3476504601741760),
                (3476504601741552, 3476504601741568),
            ]
        );
    }

    #[test]
    fn search_ranges_huge_radius_skips_repeats() {
        // Step 1: neighbours wrap onto each other; repeats are skipped.
        assert_eq!(
            search_ranges(15.0, 37.0, Shape::Radius(5_000_000.0)),
            [
                (3377699720527872, 4503599627370496),
                (2251799813685248, 3377699720527872),
                (1125899906842624, 2251799813685248),
                (0, 1125899906842624),
            ]
        );
    }

    #[test]
    fn search_ranges_near_pole_and_antimeridian() {
        assert_eq!(
            search_ranges(0.0, 84.0, Shape::Radius(100_000.0)),
            [(3747135627460608, 3764727813505024), (2234207627640832, 2251799813685248)]
        );
        assert_eq!(
            search_ranges(179.9, -33.0, Shape::Radius(50_000.0)),
            [
                (3289463912398848, 3289738790305792),
                (3289189034491904, 3289463912398848),
                (287247412756480, 287522290663424),
                (286972534849536, 287247412756480),
            ]
        );
    }

    #[test]
    fn search_ranges_other_shapes() {
        let shape = Shape::Box { width: 1000.0, height: 3000.0 };
        assert_eq!(
            search_ranges(151.2093, -33.8688, shape),
            [(3252046157316096, 3252046224424960), (3252046224424960, 3252046291533824)]
        );
        assert_eq!(
            search_ranges(-122.27652, 37.805186, Shape::Radius(10_000.0)),
            [
                (1367951378743296, 1367955673710592),
                (1367998623383552, 1368002918350848),
                (1367856889462784, 1367861184430080),
                (1367904134103040, 1367908429070336),
            ]
        );
        assert!(search_ranges(181.0, 0.0, Shape::Radius(1.0)).is_empty());
    }

    #[test]
    fn within_radius() {
        let inside = within(Shape::Radius(200_000.0), 15.0, 37.0, PALERMO.0, PALERMO.1);
        same(inside.expect("Palermo is within 200 km"), 190442.42415345114);
        assert_eq!(within(Shape::Radius(100_000.0), 15.0, 37.0, PALERMO.0, PALERMO.1), None);
        // 166274 m is just short of Palermo from Catania.
        assert_eq!(within(Shape::Radius(166_274.0), CATANIA.0, CATANIA.1, PALERMO.0, PALERMO.1), None);
    }

    #[test]
    fn within_box() {
        let square = Shape::Box { width: 400_000.0, height: 400_000.0 };
        same(within(square, 15.0, 37.0, PALERMO.0, PALERMO.1).expect("inside"), 190442.42415345114);
        same(within(square, 15.0, 37.0, CATANIA.0, CATANIA.1).expect("inside"), 56441.34008570348);
        let narrow = Shape::Box { width: 200_000.0, height: 400_000.0 };
        assert_eq!(within(narrow, 15.0, 37.0, PALERMO.0, PALERMO.1), None);
        let flat = Shape::Box { width: 400_000.0, height: 200_000.0 };
        assert_eq!(within(flat, 15.0, 37.0, PALERMO.0, PALERMO.1), None);
        let small = Shape::Box { width: 2000.0, height: 2000.0 };
        same(within(small, 10.0, 20.0, 10.0, 20.005).expect("inside"), 556.1314999999698);
        assert_eq!(within(small, 10.0, 20.0, 10.01, 20.0), None);
        same(within(small, -10.0, -20.0, -10.009, -20.0089).expect("inside"), 1365.55258429173);
    }
}
