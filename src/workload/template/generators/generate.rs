//! A generator's value, drawn: the hot path of every templated operation.

use super::*;

impl Gen {
    #[expect(clippy::too_many_lines, reason = "243 lines: to split (issue 50)")]
    pub(crate) fn generate(&self, cx: &mut Cx<'_>) -> Bson {
        match self {
            Gen::Int(g) => Bson::Int64(match g {
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
            }),
            Gen::Double(g) => Bson::Double(match g {
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
            }),
            Gen::Str(g) => {
                let n = g.length.len(cx);
                if g.fast {
                    return Bson::String(fast_string(g, n, cx));
                }
                let s = match &g.ascii {
                    Some(bytes) => {
                        let v: Vec<u8> = (0..n).map(|_| bytes[g.pick.sample(cx.rng)]).collect();
                        // The alphabet is ASCII, so any sequence of its bytes is UTF-8.
                        String::from_utf8(v).unwrap_or_default()
                    }
                    None => (0..n).map(|_| g.chars[g.pick.sample(cx.rng)]).collect(),
                };
                Bson::String(s)
            }
            Gen::Choose(g) => {
                let i = match &g.pick {
                    Pick::Uniform(u) => u.sample(cx.rng),
                    Pick::Weighted(w) => w.sample(cx.rng),
                    Pick::InTurn(id) => {
                        let n = count(cx, *id, 1, |_| 0);
                        n.rem_euclid(g.from.len() as i64) as usize
                    }
                };
                g.from[i].generate(cx)
            }
            Gen::Now(offset) => {
                Bson::DateTime(DateTime::from_millis(cx.now_ms.saturating_add(*offset)))
            }
            Gen::Date(lo, hi, exclusive) => {
                let (a, b) = (lo.get(cx), hi.get(cx));
                let (a, b) = (a.min(b), a.max(b));
                let ms = if *exclusive {
                    if a < b {
                        cx.rng.random_range(a..b)
                    } else {
                        a
                    }
                } else {
                    cx.rng.random_range(a..=b)
                };
                Bson::DateTime(DateTime::from_millis(ms))
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
            Gen::Inc(g) => {
                let v = match &g.scope {
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
                };
                Bson::Int64(v)
            }
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
            Gen::Repeat(g) => {
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
            Gen::Dataset(g) => {
                let len = g.lines.len();
                let i = match g.sequential {
                    Some((id, start)) => {
                        count(cx, id, 1, |_| start).rem_euclid(len as i64) as usize
                    }
                    None => cx.rng.random_range(0..len),
                };
                Bson::String(g.lines[i].clone())
            }
            Gen::Convert(to, from) => {
                convert::convert(*to, &from.generate(cx)).unwrap_or(Bson::Null)
            }
            Gen::ActorId => Bson::Int64(cx.state.actor(cx.user)),
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
            Gen::Freq(g) => {
                let taken = match g {
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
                };
                taken.map_or(Bson::Null, Bson::String)
            }
            Gen::Object(g) => {
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
                Bson::Document(doc)
            }
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
