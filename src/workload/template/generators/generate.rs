//! A generator's value, drawn: the hot path of every templated operation.

use super::*;

impl Gen {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_possible_wrap,
        reason = "genny's IP draw is from 0 to i32::MAX, a constant that fits a u32"
    )]
    pub(crate) fn generate(&self, cx: &mut Cx<'_>) -> Bson {
        match self {
            Gen::Int(g) => Bson::Int64(int(g, cx)),
            Gen::Double(g) => Bson::Double(double(g, cx)),
            Gen::Str(g) => Bson::String(string(g, cx)),
            Gen::Choose(g) => choose(g, cx),
            Gen::Now(offset) => {
                Bson::DateTime(DateTime::from_millis(cx.now_ms.saturating_add(*offset)))
            }
            Gen::Date(lo, hi, exclusive) => {
                Bson::DateTime(DateTime::from_millis(date(lo, hi, *exclusive, cx)))
            }
            Gen::DateOf(d) => Bson::DateTime(DateTime::from_millis(d.get(cx))),
            Gen::IncDate(g) => {
                let ms = count(cx, g.id, g.step, |cx| {
                    let actor = cx.state.actor(cx.user);
                    g.start
                        .get(cx)
                        .wrapping_add(actor.wrapping_mul(g.multiplier))
                });
                Bson::DateTime(DateTime::from_millis(ms))
            }
            Gen::NewObjectId => Bson::ObjectId(ObjectId::new()),
            Gen::ObjectIdOf(n) => object_id_of(n.generate(cx)),
            Gen::NewUuid => Bson::Binary(Binary::from_uuid(mongodb::bson::Uuid::new())),
            Gen::UuidOf(n) => uuid_of(n.generate(cx)),
            Gen::Binary(size, subtype) => {
                let mut bytes = vec![0u8; size.len(cx)];
                cx.rng.fill_bytes(&mut bytes);
                Bson::Binary(Binary {
                    subtype: *subtype,
                    bytes,
                })
            }
            Gen::Inc(g) => Bson::Int64(inc(g, cx)),
            Gen::Array(of, number, distinct) => {
                let n = number.len(cx);
                if *distinct {
                    return Bson::Array(distinct_values(of, n, cx));
                }
                Bson::Array((0..n).map(|_| of.generate(cx)).collect())
            }
            Gen::Concat(parts) => {
                let mut all = Vec::new();
                for p in parts {
                    match p.generate(cx) {
                        Bson::Array(items) => all.extend(items),
                        other => all.push(other),
                    }
                }
                Bson::Array(all)
            }
            Gen::Cycle(g) => cycle(g, cx),
            Gen::Repeat(g) => repeat(g, cx),
            Gen::Dataset(g) => Bson::String(dataset(g, cx)),
            Gen::Convert(to, from) => {
                convert::convert(*to, &from.generate(cx)).unwrap_or(Bson::Null)
            }
            Gen::ActorId => Bson::Int64(cx.state.actor(cx.user)),
            Gen::OwnId => super::super::own_id().map_or(Bson::Null, Bson::Int64),
            Gen::ActorIdString => Bson::String(cx.state.actor(cx.user).to_string()),
            Gen::TimeSpec(value, ms) => {
                // genny's duration is whole nanoseconds.
                let ns = (value.get(cx) * ms * 1e6).trunc();
                Bson::Double(ns / 1e6)
            }
            Gen::Ip => {
                // genny's: a draw from 0 to 2^31 - 1, so the first octet is below 128.
                let ip: u32 = cx.rng.random_range(0..=i32::MAX as u32);
                let [a, b, c, d] = ip.to_be_bytes();
                Bson::String(format!("{a}.{b}.{c}.{d}"))
            }
            Gen::NowTimestamp => Bson::Timestamp(Timestamp {
                time: u32::try_from(cx.now_ms.div_euclid(1000)).unwrap_or(0),
                increment: 1,
            }),
            Gen::Walk(g) => walk(g, cx),
            Gen::Freq(g) => freq(g, cx).map_or(Bson::Null, Bson::String),
            Gen::Object(g) => Bson::Document(object(g, cx)),
            Gen::Join(array, sep) => Bson::String(join(&array.generate(cx), sep)),
            Gen::Format(pieces, args) => {
                let values: Vec<Bson> = args.iter().map(|a| a.generate(cx)).collect();
                Bson::String(format_with(pieces, &values))
            }
            Gen::Key => cx.lookup.key(cx.rng).unwrap_or(Bson::Null),
            Gen::Field(path) => cx.lookup.field(path, cx.rng).unwrap_or(Bson::Null),
            Gen::Bind(name) => cx.lookup.bind(name).unwrap_or(Bson::Null),
            Gen::Step(index, path) => cx.lookup.step(*index, path).unwrap_or(Bson::Null),
        }
    }
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    reason = "genny's distributions' draws as integers, as its C++ casts them (a draw above i64::MAX saturates)"
)]
fn int(g: &IntGen, cx: &mut Cx<'_>) -> i64 {
    match g {
        IntGen::Uniform(u) => u.sample(cx.rng),
        IntGen::Between(lo, hi) => {
            let (a, b) = (lo.get(cx), hi.get(cx));
            cx.rng.random_range(a.min(b)..=a.max(b))
        }
        IntGen::Binomial(d) => d.sample(cx.rng) as i64,
        IntGen::BinomialOf(t, p) => {
            let t = t.get(cx).max(0) as u64;
            rand_distr::Binomial::new(t, *p).map_or(0, |d| d.sample(cx.rng) as i64)
        }
        IntGen::NegativeBinomial(k, p) => {
            let k = k.get(cx);
            dist::negative_binomial(k, *p, cx.rng)
        }
        IntGen::Geometric(d) => d.sample(cx.rng).min(i64::MAX as u64) as i64,
        IntGen::Poisson(d) => d.sample(cx.rng) as i64,
        IntGen::Zipf(d) => d.sample(cx.rng) as i64,
    }
}

fn double(g: &DoubleGen, cx: &mut Cx<'_>) -> f64 {
    match g {
        DoubleGen::Uniform(lo, hi) => {
            let (a, b) = (lo.get(cx), hi.get(cx));
            let (a, b) = (a.min(b), a.max(b));
            if a < b && a.is_finite() && b.is_finite() {
                cx.rng.random_range(a..b)
            } else {
                a
            }
        }
        DoubleGen::Fixed(d) => d.sample(cx.rng),
        DoubleGen::Of(kind, params) => {
            let p: Vec<f64> = params.iter().map(|r| r.get(cx)).collect();
            Sampler::new(*kind, &p).map_or(f64::NAN, |d| d.sample(cx.rng))
        }
    }
}

fn string(g: &StrGen, cx: &mut Cx<'_>) -> String {
    let n = g.length.len(cx);
    if g.fast {
        return fast_string(g, n, cx);
    }
    match &g.ascii {
        Some(bytes) => {
            let v: Vec<u8> = (0..n).map(|_| bytes[g.pick.sample(cx.rng)]).collect();
            // The alphabet is ASCII, so any sequence of its bytes is UTF-8.
            String::from_utf8(v).unwrap_or_default()
        }
        None => (0..n).map(|_| g.chars[g.pick.sample(cx.rng)]).collect(),
    }
}

fn choose(g: &ChooseGen, cx: &mut Cx<'_>) -> Bson {
    let i = choose_index(g, cx);
    g.from[i].generate(cx)
}

/// The index `^Choose` draws (then the value at it is generated).
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    reason = "an index within the list: the remainder of its (small) length"
)]
pub(in crate::workload::template) fn choose_index(g: &ChooseGen, cx: &mut Cx<'_>) -> usize {
    match &g.pick {
        Pick::Uniform(u) => u.sample(cx.rng),
        Pick::Weighted(w) => w.sample(cx.rng),
        Pick::InTurn(id) => {
            let n = count(cx, *id, 1, |_| 0);
            n.rem_euclid(g.from.len() as i64) as usize
        }
    }
}

/// Milliseconds uniform between the two, the second included unless `exclusive`.
fn date(lo: &DateArg, hi: &DateArg, exclusive: bool, cx: &mut Cx<'_>) -> i64 {
    let (a, b) = (lo.get(cx), hi.get(cx));
    let (a, b) = (a.min(b), a.max(b));
    if !exclusive {
        cx.rng.random_range(a..=b)
    } else if a < b {
        cx.rng.random_range(a..b)
    } else {
        a
    }
}

fn inc(g: &IncGen, cx: &mut Cx<'_>) -> i64 {
    match &g.scope {
        IncScope::User(id) => count(cx, *id, g.step, |cx| {
            let actor = cx.state.actor(cx.user);
            g.start
                .get(cx)
                .wrapping_add(actor.wrapping_mul(g.multiplier))
        }),
        IncScope::Global(counter) => {
            let n = counter.fetch_add(1, Ordering::Relaxed);
            g.start.get(cx).wrapping_add(n.wrapping_mul(g.step))
        }
    }
}

/// The value held for the user, generated again once it has been given `count` times.
fn repeat(g: &RepeatGen, cx: &mut Cx<'_>) -> Bson {
    let fresh = !matches!(
        cx.state.slots.get(&g.id),
        Some(Slot::Held { used, .. }) if *used < g.count
    );
    if fresh {
        let item = g.of.generate(cx);
        cx.state.slots.insert(g.id, Slot::Held { item, used: 0 });
    }
    match cx.state.slots.get_mut(&g.id) {
        Some(Slot::Held { item, used }) => {
            *used += 1;
            item.clone()
        }
        _ => Bson::Null,
    }
}

#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    reason = "an index within the data set: the remainder of its length"
)]
fn dataset(g: &DatasetGen, cx: &mut Cx<'_>) -> String {
    let len = g.lines.len();
    let i = match g.sequential {
        Some((id, start)) => count(cx, id, 1, |_| start).rem_euclid(len as i64) as usize,
        None => cx.rng.random_range(0..len),
    };
    g.lines[i].clone()
}

/// A value taken from the frequency map (the workload's shared one, or the user's own).
fn freq(g: &FreqGen, cx: &mut Cx<'_>) -> Option<String> {
    match g {
        FreqGen::Shared(map) => {
            let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
            take(&mut map, cx)
        }
        FreqGen::Own(id, from) => {
            let mut map = match cx.state.slots.remove(id) {
                Some(Slot::Freq(m)) => m,
                _ => from.clone(),
            };
            let taken = take(&mut map, cx);
            cx.state.slots.insert(*id, Slot::Freq(map));
            taken
        }
    }
}

fn object(g: &ObjectGen, cx: &mut Cx<'_>) -> Document {
    let n = g.entries.len(cx);
    let mut doc = Document::new();
    for _ in 0..n {
        let mut key = format::text(&g.keys.generate(cx));
        key.retain(|c| c != '\0');
        if g.skip_repeated && doc.contains_key(&key) {
            continue;
        }
        let value = g.values.generate(cx);
        doc.insert(key, value);
    }
    doc
}
