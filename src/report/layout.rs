//! Text laid out for the console: tables aligned in columns, fitted to a width by leaving named
//! columns out, prose wrapped at spaces, and the width a stream may take (a terminal's, or none
//! for a pipe or a file). Every console table (`table`, `parts`, `compare`, `capacity`) and the
//! live lines use it.

use std::io::Write;

/// The width the console may take on `stream`: None (everything) in a pipe or a file, or with
/// `wide`; on a terminal, `COLUMNS` when set to a number, else the terminal's width.
pub(crate) fn console_width<S>(stream: &S, wide: bool) -> Option<usize>
where
    S: std::io::IsTerminal + std::os::fd::AsFd,
{
    if wide || !stream.is_terminal() {
        return None;
    }
    let columns = std::env::var("COLUMNS").ok();
    match columns.as_deref().map(str::trim).map(str::parse::<usize>) {
        Some(Ok(n)) if n > 0 => Some(n),
        // A terminal that says it has 0 columns (a pty nobody sized) is of unknown width.
        _ => terminal_size::terminal_size_of(stream)
            .map(|(w, _)| usize::from(w.0))
            .filter(|w| *w > 0),
    }
}

/// Writes `lines` (the first is the header, underlined) as columns two spaces apart: the
/// `left` columns (labels, words) left-aligned, every other one right-aligned.
pub(crate) fn aligned(
    lines: &[Vec<String>],
    left: &[usize],
    out: &mut dyn Write,
) -> std::io::Result<()> {
    aligned_with(lines, left, "  ", out)
}

/// `aligned`, with `gap` between the columns.
fn aligned_with(
    lines: &[Vec<String>],
    left: &[usize],
    gap: &str,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let widths = column_widths(lines);
    for (i, l) in lines.iter().enumerate() {
        let cells: Vec<String> = l
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (v, w))| {
                if left.contains(&c) {
                    format!("{v:<w$}")
                } else {
                    format!("{v:>w$}")
                }
            })
            .collect();
        writeln!(out, "{}", cells.join(gap).trim_end())?;
        if i == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            writeln!(out, "{}", rule.join(gap))?;
        }
    }
    Ok(())
}

/// Writes `lines` as `aligned` does; within `width`, the columns named in `dropped` are left
/// out, the first named first, until the rest fit (the others stay even if they do not), and
/// a note names them and `full`, the file that has them all. Returns the names left out.
pub(crate) fn fitted(
    lines: &[Vec<String>],
    left: &[usize],
    width: Option<usize>,
    dropped: &[&str],
    full: &str,
    out: &mut dyn Write,
) -> std::io::Result<Vec<String>> {
    let Some(width) = width else {
        aligned(lines, left, out)?;
        return Ok(Vec::new());
    };
    let header = lines.first().map_or(&[][..], Vec::as_slice);
    let widths = column_widths(lines);
    let mut kept = vec![true; header.len()];
    let total = |kept: &[bool], gap: usize| {
        let shown: Vec<usize> = (0..kept.len()).filter(|c| kept[*c]).collect();
        shown.iter().map(|c| widths[*c]).sum::<usize>() + gap * shown.len().saturating_sub(1)
    };
    for name in dropped {
        if total(&kept, 2) <= width {
            break;
        }
        if let Some(c) = header.iter().position(|h| h == name) {
            kept[c] = false;
        }
    }
    // What must stay and is still too wide gets one space between columns (the rule under the
    // header still shows where each begins); wider than that, lines wrap.
    let gap = if total(&kept, 2) <= width { "  " } else { " " };
    let project = |l: &Vec<String>| -> Vec<String> {
        l.iter()
            .zip(&kept)
            .filter(|(_, k)| **k)
            .map(|(v, _)| v.clone())
            .collect()
    };
    let shown: Vec<Vec<String>> = lines.iter().map(project).collect();
    // A left-aligned column keeps that alignment at its new place.
    let shown_left: Vec<usize> = (0..kept.len())
        .filter(|c| kept[*c])
        .enumerate()
        .filter(|(_, c)| left.contains(c))
        .map(|(i, _)| i)
        .collect();
    aligned_with(&shown, &shown_left, gap, out)?;
    let left_out: Vec<String> = header
        .iter()
        .zip(&kept)
        .filter(|(_, k)| !**k)
        .map(|(h, _)| h.clone())
        .collect();
    if !left_out.is_empty() {
        writeln!(
            out,
            "({} left out to fit {width} columns: {}; {full} has every column, --wide prints them all here)",
            if left_out.len() == 1 { "1 column".to_string() } else { format!("{} columns", left_out.len()) },
            left_out.join(", ")
        )?;
    }
    Ok(left_out)
}

fn column_widths(lines: &[Vec<String>]) -> Vec<usize> {
    let columns = lines.first().map_or(0, Vec::len);
    (0..columns)
        .map(|c| {
            lines
                .iter()
                .map(|l| l.get(c).map_or(0, |v| v.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect()
}

/// A writer that breaks every line longer than `width` at spaces (a word longer than a line is
/// cut), continuing it two spaces further in than it began.
pub(crate) struct Wrapped<'a> {
    inner: &'a mut dyn Write,
    width: usize,
    pending: Vec<u8>,
}

impl<'a> Wrapped<'a> {
    pub(crate) fn new(inner: &'a mut dyn Write, width: usize) -> Self {
        Wrapped {
            inner,
            width,
            pending: Vec::new(),
        }
    }

    fn line(&mut self, line: &[u8]) -> std::io::Result<()> {
        let text = String::from_utf8_lossy(line);
        for l in wrap(&text, self.width) {
            writeln!(self.inner, "{l}")?;
        }
        Ok(())
    }

    /// Writes what is left of a last line without its newline.
    pub(crate) fn finish(mut self) -> std::io::Result<()> {
        if !self.pending.is_empty() {
            let rest = std::mem::take(&mut self.pending);
            let text = String::from_utf8_lossy(&rest);
            let lines = wrap(&text, self.width);
            write!(self.inner, "{}", lines.join("\n"))?;
        }
        self.inner.flush()
    }
}

impl Write for Wrapped<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        while let Some(i) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=i).collect();
            self.line(&line[..i])?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// `line` in lines of at most `width` characters, broken at spaces (the spaces between the words
/// of one line kept, so a table row keeps its alignment), a word longer than a line cut, the
/// continuation two spaces further in than the line's own indent (indents at most a third of
/// the width).
pub(crate) fn wrap(line: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    if line.chars().count() <= width {
        return vec![line.to_string()];
    }
    let indent = line
        .chars()
        .take_while(|c| *c == ' ')
        .count()
        .min(width / 3);
    let cont = (indent + 2).min(width / 3);
    // Each word with the spaces before it.
    let mut words: Vec<(usize, Vec<char>)> = Vec::new();
    let mut spaces = 0;
    let mut word = Vec::new();
    for c in line.trim_start_matches(' ').chars() {
        if c == ' ' {
            if !word.is_empty() {
                words.push((spaces, std::mem::take(&mut word)));
                spaces = 0;
            }
            spaces += 1;
        } else {
            word.push(c);
        }
    }
    if !word.is_empty() {
        words.push((spaces, word));
    }
    let mut lines = Vec::new();
    let mut current = " ".repeat(indent);
    let mut len = indent;
    let mut empty = true;
    for (spaces, mut chars) in words {
        while !chars.is_empty() {
            let sep = if empty { 0 } else { spaces };
            if len + sep + chars.len() <= width {
                current.push_str(&" ".repeat(sep));
                len += sep + chars.len();
                current.extend(chars.drain(..));
                empty = false;
                continue;
            }
            if empty {
                // Longer than a whole line: as much as fits, the rest on the next.
                let take = width.saturating_sub(len).max(1).min(chars.len());
                current.extend(chars.drain(..take));
                len += take;
                empty = false;
                if chars.is_empty() {
                    continue;
                }
            }
            lines.push(std::mem::replace(&mut current, " ".repeat(cont)));
            len = cont;
            empty = true;
        }
    }
    if !empty {
        lines.push(current);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_breaks_at_spaces_indents_the_rest_and_cuts_only_words_too_long() {
        assert_eq!(wrap("short", 10), vec!["short"]);
        assert_eq!(
            wrap("warning: a b c d e f", 10),
            vec!["warning: a", "  b c d e", "  f"]
        );
        assert_eq!(
            wrap("  1 x abcdefghijklmnop", 10),
            vec!["  1 x", "   abcdefg", "   hijklmn", "   op"]
        );
        assert_eq!(wrap("", 10), vec![""]);
        assert_eq!(
            wrap("a    b    c    d", 11),
            vec!["a    b    c", "  d"],
            "the spaces of a table row stay"
        );
        for w in 1..30 {
            for l in wrap("  every line within the width, whatever it is: yes", w) {
                assert!(l.chars().count() <= w, "{w}: {l:?}");
            }
        }
    }

    #[test]
    fn a_pipe_or_a_file_gets_no_width() {
        let file = tempfile::tempfile().unwrap();
        assert_eq!(console_width(&file, false), None);
        assert_eq!(console_width(&std::io::stdout(), true), None);
    }
}
