//! Geospatial commands: GEOADD, GEOPOS, GEODIST, GEOHASH, GEORADIUS,
//! GEORADIUSBYMEMBER (and their _RO forms), GEOSEARCH, GEOSEARCHSTORE
//! (Redis 7's `geo.c`; the geohash arithmetic is `redis_spec/geohash.rs`).
//!
//! A position is a sorted-set member whose score is its 52-bit geohash,
//! exactly as Redis stores it, so ZRANGE, DUMP and RESTORE see the same
//! set. A search scans the score ranges of the nine geohash boxes that
//! cover the shape and keeps the members inside it.
//!
//! Invariant: a command writes at most one key (GEOADD's set, or the STORE
//! destination), as one store group durable before the reply; reads never
//! write.

use crate::apps::kv::cmd::notify;
use crate::apps::kv::cmd::zranges::member_and_score;
use crate::apps::kv::cmd::zsets::parse_score;
use crate::apps::kv::ops::{key_ok, parse_i64, NOT_INTEGER, SYNTAX};
use crate::apps::kv::state::{cmd, CommandEntry, Ctx, KvServer};
use crate::redis_spec::geohash::{self, Shape};
use crate::store::db::StoreError;
use crate::store::keyspace::{score_key, Meta, SPACE_SCORE};
use std::ops::Bound;

/// This family's commands, as COMMAND describes them (Redis 7's arities,
/// flags and key positions).
#[rustfmt::skip]
pub(in crate::apps::kv) const COMMANDS: &[CommandEntry] = &[
    cmd("geoadd", -5, &["write", "denyoom"], (1, 1, 1), "geo", "Adds positions to a sorted set.", KvServer::cmd_geoadd),
    cmd("geopos", -2, &["readonly"], (1, 1, 1), "geo", "Returns the longitude and latitude of members.", KvServer::cmd_geopos),
    cmd("geodist", -4, &["readonly"], (1, 1, 1), "geo", "Returns the distance between two members.", KvServer::cmd_geodist),
    cmd("geohash", -2, &["readonly"], (1, 1, 1), "geo", "Returns members' positions as geohash strings.", KvServer::cmd_geohash),
    cmd("georadius", -6, &["write", "denyoom", "movablekeys"], (1, 1, 1), "geo", "Queries members within a radius of a position, optionally storing them.", KvServer::cmd_georadius),
    cmd("georadius_ro", -6, &["readonly"], (1, 1, 1), "geo", "Queries members within a radius of a position.", KvServer::cmd_georadius_ro),
    cmd("georadiusbymember", -5, &["write", "denyoom", "movablekeys"], (1, 1, 1), "geo", "Queries members within a radius of a member, optionally storing them.", KvServer::cmd_georadiusbymember),
    cmd("georadiusbymember_ro", -5, &["readonly"], (1, 1, 1), "geo", "Queries members within a radius of a member.", KvServer::cmd_georadiusbymember_ro),
    cmd("geosearch", -7, &["readonly"], (1, 1, 1), "geo", "Queries members inside a circle or a box.", KvServer::cmd_geosearch),
    cmd("geosearchstore", -8, &["write", "denyoom"], (1, 2, 1), "geo", "Stores the members inside a circle or a box.", KvServer::cmd_geosearchstore),
];

/// Which command, as `georadiusGeneric`'s flags.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// GEORADIUS(_RO): key lon lat radius unit.
    Coords {
        store_allowed: bool,
    },
    /// GEORADIUSBYMEMBER(_RO): key member radius unit.
    Member {
        store_allowed: bool,
    },
    Search,
    SearchStore,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Sort {
    None,
    Asc,
    Desc,
}

/// A search's parsed arguments.
struct Search {
    center: Option<(f64, f64)>,
    shape: Option<Shape>,
    /// Metres per unit of the shape's argument.
    unit_m: f64,
    with_dist: bool,
    with_hash: bool,
    with_coord: bool,
    sort: Sort,
    count: usize,
    any: bool,
    store: Option<Vec<u8>>,
    store_dist: bool,
}

/// One member found inside the shape.
struct Point {
    member: Vec<u8>,
    score: f64,
    lon: f64,
    lat: f64,
    dist_m: f64,
}

/// Metres per unit (`extractUnitOrReply`).
fn unit_m(bytes: &[u8]) -> Result<f64, &'static str> {
    match bytes.to_ascii_lowercase().as_slice() {
        b"m" => Ok(1.0),
        b"km" => Ok(1000.0),
        b"ft" => Ok(0.3048),
        b"mi" => Ok(1609.34),
        _ => Err("ERR unsupported unit provided. please use M, KM, FT, MI"),
    }
}

/// A float argument; Err: `message`'s reply.
fn float_arg(ctx: &Ctx<'_>, i: usize, message: &'static str) -> Result<f64, String> {
    parse_score(&ctx.arg(i)).ok_or_else(|| message.to_string())
}

/// A longitude and latitude at arguments i and i + 1, and their score.
fn position(ctx: &Ctx<'_>, i: usize) -> Result<(f64, f64, u64), String> {
    let lon = float_arg(ctx, i, "ERR value is not a valid float")?;
    let lat = float_arg(ctx, i + 1, "ERR value is not a valid float")?;
    match geohash::encode(lon, lat) {
        Some(score) => Ok((lon, lat, score)),
        None => Err(format!("ERR invalid longitude,latitude pair {lon:.6},{lat:.6}")),
    }
}

/// The same, without the score (a search's centre).
fn lon_lat(ctx: &Ctx<'_>, i: usize) -> Result<(f64, f64), String> {
    position(ctx, i).map(|(lon, lat, _)| (lon, lat))
}

/// A radius and its unit at arguments i and i + 1: (radius, metres per unit).
fn radius(ctx: &Ctx<'_>, i: usize) -> Result<(f64, f64), String> {
    let radius = float_arg(ctx, i, "ERR need numeric radius")?;
    if radius < 0.0 {
        return Err("ERR radius cannot be negative".into());
    }
    Ok((radius, unit_m(&ctx.arg(i + 1))?))
}

/// A box's width, height and unit at arguments i..i + 3.
fn box_size(ctx: &Ctx<'_>, i: usize) -> Result<(f64, f64, f64), String> {
    let width = float_arg(ctx, i, "ERR need numeric width")?;
    let height = float_arg(ctx, i + 1, "ERR need numeric height")?;
    if width < 0.0 || height < 0.0 {
        return Err("ERR height or width cannot be negative".into());
    }
    Ok((width, height, unit_m(&ctx.arg(i + 2))?))
}

/// A distance as Redis prints one: four decimals.
fn distance_text(d: f64) -> String {
    format!("{d:.4}")
}

/// A coordinate as Redis's `addReplyHumanLongDouble`: 17 decimals, the
/// trailing zeros dropped.
fn coordinate_text(x: f64) -> String {
    let text = format!("{x:.17}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".into()
    } else {
        text.into()
    }
}

impl KvServer {
    /// A member's position in the set (None: not a member).
    fn geo_position(&self, ctx: &Ctx<'_>, meta: Meta, member: &[u8]) -> Result<Option<(f64, f64)>, StoreError> {
        let score = self.zscore_of(ctx, meta.oid, member)?;
        Ok(score.map(|s| geohash::decode(s as u64)))
    }

    /// The sorted set at argument `i` (Ok(None): absent), or the WRONGTYPE
    /// sent (Err(())).
    fn geo_set(&self, ctx: &mut Ctx<'_>, i: usize) -> Result<Result<Option<Meta>, ()>, StoreError> {
        let key = ctx.arg(i).into_owned();
        self.zset_read(ctx, &key)
    }

    fn coordinate(ctx: &mut Ctx<'_>, x: f64) {
        let text = coordinate_text(x);
        if ctx.enc().resp3 {
            ctx.out.push(b",");
            ctx.out.push(text.as_bytes());
            ctx.out.push(b"\r\n");
        } else {
            ctx.bulk(text.as_bytes());
        }
    }

    fn cmd_geoadd(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let key = ctx.arg(1).into_owned();
        if let Err(why) = key_ok(&key) {
            ctx.error(&why);
            return Ok(());
        }
        let (mut nx, mut xx, mut ch) = (false, false, false);
        let mut first = 2;
        while first < ctx.argc() {
            match ctx.conn.args.upper(first).as_deref() {
                Some(b"NX") => nx = true,
                Some(b"XX") => xx = true,
                Some(b"CH") => ch = true,
                _ => break,
            }
            first += 1;
        }
        if (ctx.argc() - first) % 3 != 0 || (nx && xx) {
            ctx.error(SYNTAX);
            return Ok(());
        }
        let mut pairs = Vec::new();
        for i in (first..ctx.argc()).step_by(3) {
            let score = match position(ctx, i) {
                Ok((_, _, score)) => score,
                Err(why) => {
                    ctx.error(&why);
                    return Ok(());
                }
            };
            pairs.push((score as f64, ctx.arg(i + 2).into_owned()));
        }
        self.zadd_scored(ctx, (nx, xx, ch), &pairs)
    }

    fn cmd_geopos(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Ok(found) = self.geo_set(ctx, 1)? else { return Ok(()) };
        ctx.array(ctx.argc() - 2);
        for i in 2..ctx.argc() {
            let position = match found {
                Some(meta) => self.geo_position(ctx, meta, &ctx.arg(i))?,
                None => None,
            };
            match position {
                Some((lon, lat)) => {
                    ctx.array(2);
                    Self::coordinate(ctx, lon);
                    Self::coordinate(ctx, lat);
                }
                None => {
                    let enc = ctx.enc();
                    enc.null_array(ctx.out.bytes());
                }
            }
        }
        Ok(())
    }

    fn cmd_geodist(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let per_unit_m = match ctx.argc() {
            4 => 1.0,
            5 => match unit_m(&ctx.arg(4)) {
                Ok(m) => m,
                Err(why) => {
                    ctx.error(why);
                    return Ok(());
                }
            },
            _ => {
                ctx.error(SYNTAX);
                return Ok(());
            }
        };
        let Ok(found) = self.geo_set(ctx, 1)? else { return Ok(()) };
        let Some(meta) = found else {
            ctx.null();
            return Ok(());
        };
        let a = self.geo_position(ctx, meta, &ctx.arg(2))?;
        let b = self.geo_position(ctx, meta, &ctx.arg(3))?;
        match (a, b) {
            (Some(a), Some(b)) => {
                let d = geohash::distance(a.0, a.1, b.0, b.1) / per_unit_m;
                ctx.bulk(distance_text(d).as_bytes());
            }
            _ => ctx.null(),
        }
        Ok(())
    }

    fn cmd_geohash(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        let Ok(found) = self.geo_set(ctx, 1)? else { return Ok(()) };
        ctx.array(ctx.argc() - 2);
        for i in 2..ctx.argc() {
            let score = match found {
                Some(meta) => self.zscore_of(ctx, meta.oid, &ctx.arg(i))?,
                None => None,
            };
            match score {
                Some(score) => ctx.bulk(geohash::hash_string(score as u64).as_bytes()),
                None => ctx.null(),
            }
        }
        Ok(())
    }

    fn cmd_georadius(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.geo_search(ctx, Form::Coords { store_allowed: true })
    }

    fn cmd_georadius_ro(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.geo_search(ctx, Form::Coords { store_allowed: false })
    }

    fn cmd_georadiusbymember(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.geo_search(ctx, Form::Member { store_allowed: true })
    }

    fn cmd_georadiusbymember_ro(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.geo_search(ctx, Form::Member { store_allowed: false })
    }

    fn cmd_geosearch(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.geo_search(ctx, Form::Search)
    }

    fn cmd_geosearchstore(&mut self, ctx: &mut Ctx<'_>) -> Result<(), StoreError> {
        self.geo_search(ctx, Form::SearchStore)
    }

    /// `georadiusGeneric`.
    fn geo_search(&mut self, ctx: &mut Ctx<'_>, form: Form) -> Result<(), StoreError> {
        let source = if form == Form::SearchStore { 2 } else { 1 };
        let Ok(found) = self.geo_set(ctx, source)? else { return Ok(()) };
        let search = match self.geo_parse(ctx, form, found) {
            Ok(search) => search,
            Err(why) => {
                ctx.error(&why);
                return Ok(());
            }
        };
        let points = match found {
            Some(meta) => self.geo_points(ctx, meta, &search)?,
            None => Vec::new(),
        };
        match search.store.clone() {
            Some(dst) => self.geo_store(ctx, form, &dst, &search, points),
            None => {
                self.geo_reply(ctx, &search, points);
                Ok(())
            }
        }
    }

    /// Parses a search's arguments (`georadiusGeneric`'s loop and checks).
    fn geo_parse(&self, ctx: &Ctx<'_>, form: Form, found: Option<Meta>) -> Result<Search, String> {
        let mut search = Search {
            center: None,
            shape: None,
            unit_m: 1.0,
            with_dist: false,
            with_hash: false,
            with_coord: false,
            sort: Sort::None,
            count: 0,
            any: false,
            store: (form == Form::SearchStore).then(|| ctx.arg(1).into_owned()),
            store_dist: false,
        };
        let base = match form {
            Form::Coords { .. } => {
                search.center = Some(lon_lat(ctx, 2)?);
                let (r, unit) = radius(ctx, 4)?;
                (search.shape, search.unit_m) = (Some(Shape::Radius(r * unit)), unit);
                6
            }
            Form::Member { .. } => {
                if let Some(meta) = found {
                    let position = self.geo_position(ctx, meta, &ctx.arg(2)).map_err(|e| e.to_string())?;
                    search.center = Some(position.ok_or("ERR could not decode requested zset member")?);
                    let (r, unit) = radius(ctx, 3)?;
                    (search.shape, search.unit_m) = (Some(Shape::Radius(r * unit)), unit);
                }
                5
            }
            Form::Search => 2,
            Form::SearchStore => 3,
        };
        self.geo_options(ctx, form, found, base, &mut search)?;
        Ok(search)
    }

    /// The options from argument `base` on.
    fn geo_options(
        &self,
        ctx: &Ctx<'_>,
        form: Form,
        found: Option<Meta>,
        base: usize,
        search: &mut Search,
    ) -> Result<(), String> {
        let searching = matches!(form, Form::Search | Form::SearchStore);
        let store_allowed = matches!(form, Form::Coords { store_allowed: true } | Form::Member { store_allowed: true });
        let (mut from_member, mut from_loc, mut by_radius, mut by_box) = (false, false, false, false);
        let argc = ctx.argc();
        let mut i = base;
        while i < argc {
            let left = argc - i - 1;
            let word = ctx.arg(i).to_ascii_lowercase();
            match word.as_slice() {
                b"withdist" => search.with_dist = true,
                b"withhash" => search.with_hash = true,
                b"withcoord" => search.with_coord = true,
                b"any" => search.any = true,
                b"asc" => search.sort = Sort::Asc,
                b"desc" => search.sort = Sort::Desc,
                b"count" if left >= 1 => {
                    let count = parse_i64(&ctx.arg(i + 1)).ok_or(NOT_INTEGER)?;
                    if count <= 0 {
                        return Err("ERR COUNT must be > 0".into());
                    }
                    search.count = count as usize;
                    i += 1;
                }
                b"store" | b"storedist" if left >= 1 && store_allowed => {
                    search.store = Some(ctx.arg(i + 1).into_owned());
                    search.store_dist = word == b"storedist";
                    i += 1;
                }
                b"storedist" if form == Form::SearchStore => search.store_dist = true,
                b"frommember" if left >= 1 && searching && !from_loc => {
                    if let Some(meta) = found {
                        let position = self.geo_position(ctx, meta, &ctx.arg(i + 1)).map_err(|e| e.to_string())?;
                        search.center = Some(position.ok_or("ERR could not decode requested zset member")?);
                    }
                    from_member = true;
                    i += 1;
                }
                b"fromlonlat" if left >= 2 && searching && !from_member => {
                    search.center = Some(lon_lat(ctx, i + 1)?);
                    from_loc = true;
                    i += 2;
                }
                b"byradius" if left >= 2 && searching && !by_box => {
                    let (r, unit) = radius(ctx, i + 1)?;
                    (search.shape, search.unit_m) = (Some(Shape::Radius(r * unit)), unit);
                    by_radius = true;
                    i += 2;
                }
                b"bybox" if left >= 3 && searching && !by_radius => {
                    let (w, h, unit) = box_size(ctx, i + 1)?;
                    search.shape = Some(Shape::Box { width: w * unit, height: h * unit });
                    search.unit_m = unit;
                    by_box = true;
                    i += 3;
                }
                _ => return Err(SYNTAX.into()),
            }
            i += 1;
        }
        let name = String::from_utf8_lossy(&ctx.arg(0)).into_owned();
        if search.store.is_some() && (search.with_dist || search.with_hash || search.with_coord) {
            let what = if form == Form::SearchStore { "GEOSEARCHSTORE" } else { "STORE option in GEORADIUS" };
            return Err(format!("ERR {what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options"));
        }
        if searching && !(from_member || from_loc) {
            return Err(format!("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}"));
        }
        if searching && !(by_radius || by_box) {
            return Err(format!("ERR exactly one of BYRADIUS and BYBOX can be specified for {name}"));
        }
        if search.any && search.count == 0 {
            return Err("ERR the ANY argument requires COUNT argument".into());
        }
        Ok(())
    }

    /// The members inside the search's shape, sorted as asked.
    fn geo_points(&self, ctx: &Ctx<'_>, meta: Meta, search: &Search) -> Result<Vec<Point>, StoreError> {
        let (Some((lon, lat)), Some(shape)) = (search.center, search.shape) else { return Ok(Vec::new()) };
        let limit = if search.any { search.count } else { 0 };
        let mut points = Vec::new();
        for (min, max) in geohash::search_ranges(lon, lat, shape) {
            if limit > 0 && points.len() >= limit {
                break;
            }
            let (low, high) = (score_key(min as f64), score_key(max as f64));
            let elements = self.store.elements(
                ctx.pool,
                meta.oid,
                SPACE_SCORE,
                Bound::Included(&low[..]),
                Bound::Excluded(&high[..]),
                false,
            );
            for entry in elements {
                let (member, score) = member_and_score(entry?.0);
                let (plon, plat) = geohash::decode(score as u64);
                if let Some(dist_m) = geohash::within(shape, lon, lat, plon, plat) {
                    points.push(Point { member, score, lon: plon, lat: plat, dist_m });
                }
                if limit > 0 && points.len() >= limit {
                    break;
                }
            }
        }
        let sort = if search.count > 0 && search.sort == Sort::None && !search.any { Sort::Asc } else { search.sort };
        match sort {
            Sort::Asc => points.sort_by(|a, b| a.dist_m.total_cmp(&b.dist_m)),
            Sort::Desc => points.sort_by(|a, b| b.dist_m.total_cmp(&a.dist_m)),
            Sort::None => {}
        }
        if search.count > 0 {
            points.truncate(search.count);
        }
        Ok(points)
    }

    fn geo_reply(&self, ctx: &mut Ctx<'_>, search: &Search, points: Vec<Point>) {
        let options = usize::from(search.with_dist) + usize::from(search.with_hash) + usize::from(search.with_coord);
        ctx.array(points.len());
        for point in points {
            if options > 0 {
                ctx.array(options + 1);
            }
            ctx.bulk(&point.member);
            if search.with_dist {
                ctx.bulk(distance_text(point.dist_m / search.unit_m).as_bytes());
            }
            if search.with_hash {
                ctx.int(point.score as i64);
            }
            if search.with_coord {
                ctx.array(2);
                Self::coordinate(ctx, point.lon);
                Self::coordinate(ctx, point.lat);
            }
        }
    }

    /// STORE, STOREDIST and GEOSEARCHSTORE: the points as a sorted set at
    /// `dst` (scores: geohashes, or distances in the unit), replacing it;
    /// none deletes it.
    fn geo_store(
        &mut self,
        ctx: &mut Ctx<'_>,
        form: Form,
        dst: &[u8],
        search: &Search,
        points: Vec<Point>,
    ) -> Result<(), StoreError> {
        if let Err(why) = key_ok(dst) {
            ctx.error(&why);
            return Ok(());
        }
        let count = points.len();
        let members: Vec<(Vec<u8>, f64)> = points
            .into_iter()
            .map(|p| {
                let score = if search.store_dist { p.dist_m / search.unit_m } else { p.score };
                (p.member, score)
            })
            .collect();
        let existed = self.store.key_type(ctx.pool, ctx.db, dst, ctx.now)?.is_some();
        self.zstore(ctx, dst, &members)?;
        if count > 0 {
            let event = if form == Form::SearchStore { "geosearchstore" } else { "georadiusstore" };
            self.notify(ctx, notify::ZSET, event, dst);
        } else if existed {
            self.notify(ctx, notify::GENERIC, "del", dst);
        }
        ctx.int(count as i64);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinates_and_distances_print_as_redis_prints_them() {
        assert_eq!(coordinate_text(13.361389338970184), "13.36138933897018433");
        assert_eq!(coordinate_text(-2.5), "-2.5");
        assert_eq!(coordinate_text(0.0), "0");
        assert_eq!(distance_text(166274.15156960033), "166274.1516");
        assert_eq!(distance_text(0.0), "0.0000");
    }

    #[test]
    fn units_are_redis_s_four() {
        assert_eq!(unit_m(b"KM"), Ok(1000.0));
        assert_eq!(unit_m(b"mi"), Ok(1609.34));
        assert!(unit_m(b"yd").is_err());
    }
}
