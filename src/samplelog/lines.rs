//! One line of `samples.tsv` and one of JMeter's CSV (JTL), per sample.

use crate::metrics::{Logged, Sample};

/// Header of `samples.tsv`.
pub(crate) const SAMPLES_HEADER: &str = "start_us\telapsed_us\tgroup\tthread\tok\terror\tsent_bytes\treceived_bytes\tintended_us\tlatency_us\tphase\top";

/// JMeter's default CSV header (jmeter.properties `jmeter.save.saveservice.*` defaults).
pub(crate) const JTL_HEADER: &str = "timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,failureMessage,bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect";

pub(super) fn format_tsv(out: &mut String, s: &Sample, groups: &[String]) {
    let group = groups.get(usize::from(s.group)).map_or("?", |g| g.as_str());
    let (ok, err) = match &s.error {
        None => ("1", ""),
        Some(e) => ("0", e.class.as_str()),
    };
    // itoa instead of `write!`: this runs once per operation.
    let mut buf = itoa::Buffer::new();
    let mut number = |out: &mut String, v: u64, end: char| {
        out.push_str(buf.format(v));
        out.push(end);
    };
    number(out, s.start_us, '\t');
    number(out, s.elapsed_us, '\t');
    out.push_str(group);
    out.push('\t');
    number(out, u64::from(s.thread), '\t');
    out.push_str(ok);
    out.push('\t');
    out.push_str(err);
    out.push('\t');
    number(out, u64::from(s.sent), '\t');
    number(out, u64::from(s.received), '\t');
    number(out, s.intended_us, '\t');
    number(out, s.latency_us(), '\t');
    out.push_str(if s.warmup { "warmup\t" } else { "measure\t" });
    out.push_str(s.op.as_str());
    out.push('\n');
}

pub(super) fn format_jtl(out: &mut String, l: &Logged, groups: &[String], url: &str) {
    use std::fmt::Write;
    let s = &l.sample;
    let group = groups.get(usize::from(s.group)).map_or("?", |g| g.as_str());
    // A mixing group's operations are labelled by kind (`group:get`), as its summary rows are.
    let group = if s.mixed {
        crate::metrics::Label::kind(group, s.op.clone()).to_string()
    } else {
        group.to_string()
    };
    // Warm-up lines get a label of their own, so JMeter's reports keep them apart.
    let label = if s.warmup {
        csv(&format!("warmup:{group}"))
    } else {
        csv(&group)
    };
    // Like our summary, JMeter's report then measures from the intended start (open loop).
    let elapsed_ms = s.latency_us() / 1000;
    let (code, message, success, failure) = match &s.error {
        None => ("200".to_string(), "OK".to_string(), "true", String::new()),
        Some(e) => (
            e.class.as_str().to_string(),
            csv(&e.message.as_str()),
            "false",
            csv(&e.message.as_str()),
        ),
    };
    let _ = writeln!(
        out,
        "{},{elapsed_ms},{label},{code},{message},{label} 1-{},text,{success},{failure},{},{},{},{},{url},{elapsed_ms},0,0",
        s.intended_us.min(s.start_us) / 1000,
        s.thread,
        s.received,
        s.sent,
        l.group_threads,
        l.all_threads,
    );
}

/// Quotes a CSV field when it needs it (RFC 4180).
pub(super) fn csv(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{ErrorClass, OpError};

    fn sample(error: Option<OpError>) -> Sample {
        Sample {
            group: crate::metrics::sample::GroupId::try_from(1).expect("fits"),
            op: crate::workload::OpKind::Find.into(),
            thread: 7,
            sent: 120,
            received: 4096,
            matched: true,
            error: error.map(Box::new),
            ..Sample::at(1_700_000_000_123_456, 2_345)
        }
    }

    #[test]
    fn a_tsv_line_has_one_field_per_header_column() {
        let mut s = String::new();
        format_tsv(&mut s, &sample(None), &["a".into(), "find".into()]);
        assert_eq!(
            s,
            "1700000000123456\t2345\tfind\t7\t1\t\t120\t4096\t1700000000123456\t2345\tmeasure\tfind\n"
        );
        assert_eq!(
            s.trim_end().split('\t').count(),
            SAMPLES_HEADER.split('\t').count()
        );
    }

    #[test]
    fn an_open_loop_line_carries_the_intended_start_and_the_latency_from_it() {
        let mut late = sample(None);
        late.intended_us -= 1_000_000;
        late.late = true;
        let mut s = String::new();
        format_tsv(&mut s, &late, &["a".into(), "find".into()]);
        assert!(
            s.ends_with("\t1699999999123456\t1002345\tmeasure\tfind\n"),
            "{s}"
        );
        let mut j = String::new();
        format_jtl(
            &mut j,
            &Logged {
                sample: late,
                group_threads: 1,
                all_threads: 1,
            },
            &["a".into(), "find".into()],
            "null",
        );
        assert!(j.starts_with("1699999999123,1002,find,"), "{j}");
    }

    #[test]
    fn a_jtl_line_follows_jmeters_columns_and_quotes_messages() {
        let mut s = String::new();
        let e = OpError {
            class: ErrorClass::ServerError,
            code: None,
            message: "E11000, \"dup\"".into(),
        };
        let l = Logged {
            sample: sample(Some(e)),
            group_threads: 3,
            all_threads: 9,
        };
        format_jtl(&mut s, &l, &["a".into(), "find".into()], "null");
        assert_eq!(
            s,
            "1700000000123,2,find,server_error,\"E11000, \"\"dup\"\"\",find 1-7,text,false,\"E11000, \"\"dup\"\"\",4096,120,3,9,null,2,0,0\n"
        );
    }
}
