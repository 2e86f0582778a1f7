//! One measured operation, as a virtual user hands it to the recorder, and as the recorder
//! hands it on to the sample log.

use crate::vocab::OpName;

pub use crate::vocab::ErrorClass;

#[derive(Debug, Clone)]
pub struct OpError {
    pub class: ErrorClass,
    /// The server's code, when the server returned the failure.
    pub code: Option<crate::vocab::ServerCode>,
    pub message: ErrorText,
}

/// A failure's message: the error itself as the virtual user caught it, made into one line
/// without passwords (`text`) by the recorder, off the virtual user's path, once.
#[derive(Clone)]
pub enum ErrorText {
    Text(String),
    Caught(std::sync::Arc<dyn std::fmt::Display + Send + Sync>),
}

/// Longest message kept of a failure, in bytes (cut at a word where one is near).
const MAX_MESSAGE_BYTES: usize = 400;

impl ErrorText {
    /// The message, made into its text once.
    pub(crate) fn text(&mut self) -> &str {
        if let ErrorText::Caught(e) = self {
            *self = ErrorText::Text(one_line(&e.to_string()));
        }
        match self {
            ErrorText::Text(t) => t,
            ErrorText::Caught(_) => unreachable!("made into text above"),
        }
    }

    /// The message's text (made now, not kept, when `text` has not made it yet).
    pub(crate) fn as_str(&self) -> std::borrow::Cow<'_, str> {
        match self {
            ErrorText::Text(t) => std::borrow::Cow::Borrowed(t),
            ErrorText::Caught(e) => std::borrow::Cow::Owned(one_line(&e.to_string())),
        }
    }
}

/// One line without passwords, at most `MAX_MESSAGE_BYTES` (cut at a character).
fn one_line(message: &str) -> String {
    let mut message = crate::redact::redact(message).replace(['\n', '\t'], " ");
    if message.len() > MAX_MESSAGE_BYTES {
        let at_char = (0..=MAX_MESSAGE_BYTES)
            .rev()
            .find(|i| message.is_char_boundary(*i))
            .unwrap_or(0);
        let cut = message[..at_char]
            .rfind(' ')
            .filter(|space| at_char - space < 40)
            .unwrap_or(at_char);
        message.truncate(cut);
        message.push_str("...");
    }
    message
}

impl std::fmt::Debug for ErrorText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl std::fmt::Display for ErrorText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.as_str())
    }
}

impl PartialEq<&str> for ErrorText {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl From<String> for ErrorText {
    fn from(s: String) -> Self {
        ErrorText::Text(s)
    }
}

impl From<&str> for ErrorText {
    fn from(s: &str) -> Self {
        ErrorText::Text(s.to_string())
    }
}

/// A group plan's position among all groups of the plan (`GroupPlan::index`), as a sample
/// carries it. Four bytes, so it cannot wrap (each rate step is a group plan of its own: 66
/// groups of 1,000 steps passed a `u16`'s 65,535 and filed samples under another group), and a
/// `Sample` stays 56 bytes, as it was with a `u16`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupId(u32);

impl TryFrom<usize> for GroupId {
    type Error = std::num::TryFromIntError;

    fn try_from(index: usize) -> Result<Self, Self::Error> {
        u32::try_from(index).map(GroupId)
    }
}

impl From<GroupId> for usize {
    fn from(g: GroupId) -> usize {
        // Made only from a `usize`, so it fits back.
        g.0 as usize
    }
}

/// What one operation did to documents: returned (cursors read to the end), inserted, upserted,
/// deleted. An operation moves at most a batch or a cursor's worth, far below 2^32.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpDocs {
    pub(crate) returned: u32,
    pub(crate) inserted: u32,
    pub(crate) updated: u32,
    pub(crate) upserted: u32,
    pub(crate) deleted: u32,
    /// What a count answered.
    pub(crate) counted: u32,
}

impl OpDocs {
    pub fn new(returned: u64, inserted: u64, updated: u64, upserted: u64, deleted: u64) -> Self {
        let c = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
        OpDocs {
            returned: c(returned),
            inserted: c(inserted),
            updated: c(updated),
            upserted: c(upserted),
            deleted: c(deleted),
            counted: 0,
        }
    }

    /// With what a count answered.
    pub fn counting(self, counted: u64) -> Self {
        OpDocs {
            counted: u32::try_from(counted).unwrap_or(u32::MAX),
            ..self
        }
    }
}

/// One step of an operation of steps: its row's name, microseconds, the documents it moved,
/// and its failure when its row counts one (`on_error`: `end` or `record`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepSample {
    pub name: crate::vocab::OpName,
    pub us: u32,
    pub docs: OpDocs,
    /// It found or wrote a document.
    pub matched: bool,
    pub error: Option<StepFailure>,
}

/// A step's failure, as its row counts it: its class and the server's code, and its message.
#[derive(Debug, Clone)]
pub struct StepFailure(pub Box<OpError>);

/// Two steps' failures are alike when their class and code are (the message is text to show).
impl PartialEq for StepFailure {
    fn eq(&self, o: &Self) -> bool {
        self.0.class == o.0.class && self.0.code == o.0.code
    }
}

impl Eq for StepFailure {}

/// How a transaction ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TxState {
    #[default]
    Committed,
    /// Aborted: by an error (its class is the sample's) or by a step that matched nothing.
    Aborted,
    /// The commit's outcome is unknown (the server went away while committing, or the time
    /// limit ran out on UnknownTransactionCommitResult): never counted as committed.
    InDoubt,
}

/// A transaction's end and how often it was retried: the whole transaction (on
/// TransientTransactionError) and its commit (on UnknownTransactionCommitResult).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TxSample {
    pub state: TxState,
    pub retries: u16,
    pub commit_retries: u16,
}

/// What an operation of several steps adds to its sample.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SampleExtra {
    /// Each step sent, in order (of the attempt that counted, for a transaction).
    pub steps: Vec<StepSample>,
    /// A transaction's end and retries; None for steps outside one.
    pub tx: Option<TxSample>,
    /// A transaction's first attempt, microseconds (its steps and commit, before any retry).
    pub first_attempt_us: Option<u32>,
}

#[derive(Debug, Clone)]
pub struct Sample {
    /// `GroupPlan::index`.
    pub group: GroupId,
    /// What the operation was (a group with a `mix` draws it per operation).
    pub op: OpName,
    /// Its group mixes operations: the summary has a row per kind too.
    pub mixed: bool,
    /// Virtual user number within the group, from 1 as in JMeter's thread names.
    pub thread: u32,
    /// Actual start, microseconds since the Unix epoch.
    pub start_us: u64,
    /// When the schedule wanted it to start (open loop); equal to `start_us` in closed loop.
    pub intended_us: u64,
    /// Service time: from the actual start to the end.
    pub elapsed_us: u64,
    /// Every user of the group was still busy when this one was due (open loop).
    pub late: bool,
    /// It started within its group's warm-up: logged, but not counted in the summary.
    pub warmup: bool,
    /// BSON payload bytes sent (document, filter, update).
    pub sent: u32,
    /// BSON payload bytes received (documents returned).
    pub received: u32,
    /// The operation found or wrote at least one document (always true for a successful insert).
    pub matched: bool,
    /// An update modified, or a remove deleted, at least one document.
    pub modified: bool,
    /// Documents returned, inserted, upserted, deleted (a batch is one sample).
    pub docs: OpDocs,
    /// Steps and transactions: each step's time, a transaction's end, retries and first
    /// attempt (boxed: most operations have none).
    pub extra: Option<Box<SampleExtra>>,
    pub error: Option<Box<OpError>>,
}

impl Sample {
    /// A successful, on-time closed-loop sample of group 0, thread 1; tests set what they need.
    #[cfg(test)]
    pub(crate) fn at(start_us: u64, elapsed_us: u64) -> Sample {
        Sample {
            group: GroupId(0),
            op: crate::vocab::OpKind::Insert.into(),
            mixed: false,
            thread: 1,
            start_us,
            intended_us: start_us,
            elapsed_us,
            late: false,
            warmup: false,
            sent: 0,
            received: 0,
            matched: false,
            modified: false,
            docs: Default::default(),
            extra: None,
            error: None,
        }
    }

    pub(crate) fn end_us(&self) -> u64 {
        self.start_us + self.elapsed_us
    }

    /// Latency as reported. A late operation (its user was still busy when it was due) counts
    /// from its intended start, so the wait behind a slow server shows. Any other operation
    /// started on time but for the timer's own resolution (tokio's 1 ms), which is the tool's,
    /// not the server's: it counts from its actual start, as in closed loop.
    pub(crate) fn latency_us(&self) -> u64 {
        if self.late {
            self.end_us()
                .saturating_sub(self.intended_us.min(self.start_us))
        } else {
            self.elapsed_us
        }
    }

    /// How far behind its intended start a late operation started; 0 for any other.
    pub(crate) fn behind_us(&self) -> u64 {
        if self.late {
            self.start_us.saturating_sub(self.intended_us)
        } else {
            0
        }
    }
}

/// A sample with the thread counts JMeter's log format wants, taken when it was recorded.
pub struct Logged {
    pub(crate) sample: Sample,
    pub(crate) group_threads: u32,
    pub(crate) all_threads: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_id_holds_every_index_a_plan_can_have_and_refuses_what_would_wrap() {
        for index in [0, 65_535, 65_536, 66_000, u32::MAX as usize] {
            assert_eq!(usize::from(GroupId::try_from(index).unwrap()), index);
        }
        #[cfg(target_pointer_width = "64")]
        assert!(GroupId::try_from(u32::MAX as usize + 1).is_err());
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_sample_sent_per_operation_stays_104_bytes() {
        // 56 before the profile's own operations: document counts (20 bytes), a named
        // operation (a tagged thin pointer, 16 with alignment, instead of a byte) and the steps'
        // and transaction's extra (a pointer, boxed: most operations have none) were added.
        assert_eq!(std::mem::size_of::<Sample>(), 104);
    }
}
